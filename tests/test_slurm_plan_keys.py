"""A [slurm] table is read as written or refused in one line: a key it should not have is named with the valid ones,
a bad value with what it must be."""

import pytest

from gpubench.launcher.errors import LaunchError
from gpubench.launcher.slurm.plan import SlurmTable, enroot_image, parse_slurm

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


@pytest.mark.parametrize("image, uri", [
    ("ghcr.io/gpubench/whisper:0.1.0", "ghcr.io#gpubench/whisper:0.1.0"),  # enroot: the registry ends at '#'
    ("localhost:5000/gpubench/embed:1", "localhost:5000#gpubench/embed:1"),
    ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
    ("gpubench/embed:1", "gpubench/embed:1"),  # Docker Hub: no registry to name
    ("ubuntu", "ubuntu"),
    ("nvcr.io#nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),  # already enroot's form
    ("/shared/images/embed.sqsh", "/shared/images/embed.sqsh"),  # a squashfs file
    ("docker://ghcr.io/gpubench/embed:1", "docker://ghcr.io#gpubench/embed:1"),
])
def test_a_pyxis_image_is_named_as_enroot_reads_it(image, uri):
    assert enroot_image(image) == uri


def test_the_sites_options_are_read_and_checked():
    cluster = parse_slurm({"container": "apptainer", "account": "bench", "qos": "high", "cpus_per_gpu": 16,
                           "exclusive": False, "array_throttle": 8, "srun_args": ["--mpi=pmix"],
                           "container_mounts": ["/shared/hf:/hf:ro"], "gpus": GPUS}, "plan.toml")
    assert (cluster.account, cluster.qos, cluster.cpus_per_gpu, cluster.exclusive, cluster.array_throttle) == (
        "bench", "high", 16, False, 8)
    options = cluster.sbatch_options(cluster.gpu("H100"), 2, 30, 32, cluster.is_exclusive(smoke=False))
    assert "--cpus-per-task=32" in options and "--exclusive" not in options and "--account=bench" in options
    command = cluster.job_command("gpubench run embed", "ghcr.io/gpubench/embed:1", "/r", None, 32)
    assert command[:4] == ["srun", "--ntasks=1", "--cpus-per-task=32", "--mpi=pmix"]
    assert command[command.index("--bind") + 3] == "/shared/hf:/hf:ro"
    for table, line in [
        ({"python": "/p", "gpus": GPUS, "container_mounts": ["/a:/b"]}, "[slurm] container_mounts are for a container"),
        ({"container": "pyxis", "gpus": GPUS, "container_mounts": ["a:/b"]}, "[slurm] container_mounts must be a list"),
        ({"python": "/p", "gpus": GPUS, "cpus_per_gpu": 0}, "[slurm] cpus_per_gpu must be a whole number from 1"),
        ({"python": "/p", "gpus": GPUS, "account": "a b"}, "[slurm] account must be a Slurm account name"),
        ({"python": "/p", "gpus": GPUS, "exclusive": "yes"}, "[slurm] exclusive must be true or false"),
        ({"python": "/p", "gpus": GPUS, "srun_args": ["-n1"]}, "[slurm] srun_args must be a list of srun options"),
    ]:
        with pytest.raises(LaunchError) as caught:
            parse_slurm(table, "plan.toml")
        assert str(caught.value).startswith(f"plan.toml: {line}"), caught.value
