"""The registry of providers (launcher/providers.py): the one place that names them; a lookup by an unknown name is
one line listing the valid names."""

from __future__ import annotations

import pytest

from gpubench.launcher import providers
from gpubench.launcher.errors import LaunchError


def test_an_unknown_provider_lists_the_valid_names():
    with pytest.raises(LaunchError) as caught:
        providers.get("kubernetes")
    assert str(caught.value) == "unknown provider 'kubernetes'; valid: runcrate, slurm, docker"


def test_the_default_is_the_first_line_and_tables_name_the_others():
    assert providers.DEFAULT == "runcrate"
    assert providers.tables() == ["slurm", "docker"]
