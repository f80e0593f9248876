"""A [slurm] table with a key it should not have is refused in one line that names the key and the valid ones."""

import pytest

from gpubench.launcher.errors import LaunchError
from gpubench.launcher.slurm_plan import SLURM_KEYS, parse_slurm


def test_an_unknown_slurm_key_is_named_with_the_valid_ones():
    with pytest.raises(LaunchError) as caught:
        parse_slurm({"partitons": {}}, "plan.toml")
    keys = ', '.join(sorted(SLURM_KEYS))
    assert str(caught.value) == f"plan.toml: unknown key 'partitons' in [slurm] (keys: {keys})"
