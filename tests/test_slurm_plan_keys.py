"""A [slurm] table is read as written or refused in one line: a key it should not have is named with the valid ones,
a bad value with what it must be."""

import pytest

from gpubench.launcher.errors import LaunchError
from gpubench.launcher.slurm.plan import SlurmTable, parse_slurm

GPUS = {"H100": {"partition": "h100", "gres": "gpu:h100"}, "L40S": {"partition": "l40s"}}


def test_an_unknown_slurm_key_is_named_with_the_valid_ones():
    with pytest.raises(LaunchError) as caught:
        parse_slurm({"partitons": {}}, "plan.toml")
    keys = ', '.join(sorted(SlurmTable.model_fields))
    assert str(caught.value) == f"plan.toml: unknown key 'partitons' in [slurm] (keys: {keys})"


def test_a_good_table_becomes_the_cluster():
    cluster = parse_slurm({"python": "/venv/bin/python", "max_gpu_hours": 4, "sbatch_args": ["--account=b"],
                           "gpus": GPUS}, "plan.toml")
    assert (cluster.python, cluster.container, cluster.time_margin_minutes) == ("/venv/bin/python", None, 10)
    assert cluster.max_gpu_hours == 4.0 and cluster.sbatch_args == ("--account=b",)
    assert cluster.gpu("H100").request(2) == ["--partition=h100", "--gres=gpu:h100:2"]
    assert cluster.gpu("l40s").request(1) == ["--partition=l40s", "--gpus=1"]
    assert parse_slurm({"container": "pyxis", "gpus": GPUS}, "p", python="/opt/py").container is None


@pytest.mark.parametrize("table, line", [
    ([], "write the cluster as a [slurm] table"),
    ({"gpus": GPUS}, "say where the job's gpubench comes from"),
    ({"container": "docker", "gpus": GPUS}, "[slurm] container must be one of pyxis, apptainer, not 'docker'"),
    ({"python": "venv/bin/python", "gpus": GPUS},
     "the Slurm Python must be an absolute path on the nodes, not 'venv/bin/python'"),
    ({"python": "/p", "gpus": GPUS, "time_margin_minutes": 1.5},
     "[slurm] time_margin_minutes must be a whole number from 0 to 1440"),
    ({"python": "/p", "gpus": GPUS, "time_margin_minutes": True},
     "[slurm] time_margin_minutes must be a whole number from 0 to 1440"),
    ({"python": "/p", "gpus": GPUS, "max_gpu_hours": float("inf")},
     "[slurm] max_gpu_hours must be a positive number, not inf"),
    ({"python": "/p", "gpus": GPUS, "max_gpu_hours": "4"}, "[slurm] max_gpu_hours must be a positive number, not '4'"),
    ({"python": "/p", "gpus": GPUS, "sbatch_args": ["-A", "b"]},
     "[slurm] sbatch_args must be a list of sbatch options"),
    ({"python": "/p", "gpus": {}}, "[slurm.gpus] is missing: map each GPU name of the plan to a partition,"
                                   " e.g. H100 = { partition = \"h100\", gres = \"gpu:h100\" }"),
    ({"python": "/p", "gpus": {"H100": "h100"}}, "[slurm.gpus] H100: must be { partition = \"NAME\" }"),
    ({"python": "/p", "gpus": {"H100": {"partition": ""}}}, "[slurm.gpus] H100: must be { partition = \"NAME\" }"),
    ({"python": "/p", "gpus": {"H100": {"partition": "h", "gres": "tpu:v5"}}},
     "[slurm.gpus] H100: gres must be like \"gpu:h100\" (or \"\" for none)"),
    ({"python": "/p", "gpus": {"H100": {"partition": "h", "gpu": "h100"}}},
     "[slurm.gpus] H100: unknown key 'gpu' (keys: gres, partition)"),
])
def test_a_bad_value_is_one_line_saying_what_it_must_be(table, line):
    with pytest.raises(LaunchError) as caught:
        parse_slurm(table, "plan.toml")
    assert str(caught.value).startswith(f"plan.toml: {line}")
