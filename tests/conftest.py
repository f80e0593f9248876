from __future__ import annotations

import functools
import itertools
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test helpers (s3server, fake_runcrate)

import s3server  # noqa: E402

# Every process the tests start inherits these: a torch process uses one thread, and inductor compiles in the process
# that asked instead of a pool of workers that each import torch again. Three pytest workers share two cores, so more
# threads only wait for each other (OpenMP's spinning threads burn the cores the others need); what the tests check
# is behaviour, not speed. A caller's own setting stays.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

_bucket_ids = itertools.count()


def pytest_configure(config):
    """Once, in the process that starts the workers: byte-compile gpubench's own packages. Where the environment says
    PYTHONDONTWRITEBYTECODE (this project's dev and CI machines do) no process writes a .pyc, so each of the suite's
    ~1,000 Python processes compiled the modules it imported again (0.07 CPU-s for the CLI and worker alone); an
    explicit compile writes them all the same, and leaves fresh ones as they are. The libraries' own were compiled by
    pip at install."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    root = Path(__file__).parent.parent
    for package in ("gpubench", "workloads", "launcher"):  # pyproject.toml's package-dir
        compileall.compile_dir(root / package, quiet=1)


@pytest.fixture(scope="session")
def s3():
    """A real SeaweedFS S3 server (auth on, test keys); reused if .ci/run started one."""
    server = s3server.from_environment()
    started = server is None
    if started:
        server = s3server.start()
    yield server
    if started:
        server.stop()


@pytest.fixture(scope="session")
def tiny_vllm(tmp_path_factory):
    """The real vLLM the server tests share (tests/vllm_support.py); started by the first test that asks."""
    from vllm_support import TinyVllm

    served = TinyVllm(tmp_path_factory.mktemp("vllm"))
    yield served
    served.stop()


@pytest.fixture(scope="session")
def tiny_llamacpp(tmp_path_factory):
    """The real llama-server the server tests share (tests/llamacpp_support.py); started by the first test that asks."""
    from llamacpp_support import TinyLlamaCpp

    served = TinyLlamaCpp(tmp_path_factory.mktemp("llamacpp"))
    yield served
    served.stop()


@pytest.fixture
def s3_bucket(s3) -> str:
    """A fresh, empty bucket on the test S3 server."""
    return s3.make_bucket(f"t{os.getpid()}-{next(_bucket_ids)}")


@pytest.fixture
def s3_env(s3, monkeypatch):
    """The process environment pointed at the test S3 server (and nowhere else)."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return s3.env()


@pytest.fixture
def clean_aws_env(monkeypatch, tmp_path):
    """No AWS credentials anywhere: no variables, no config files."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


# ---- test layers (pyproject.toml registers the markers; docs/architecture.md "Tests" says how to run each) --------
# engine: needs a service or an engine the plain install lacks (S3, a Docker engine, vLLM, llama.cpp, a browser,
# Slurm);
# fast: logic in the test process: it imports none of NOT_FAST (a subprocess, a real run or workload, torch, a fake
# server on a clock, a terminal) and needs no engine. `pytest -m fast` takes well under 2 minutes.
ENGINE_FIXTURES = {"s3", "s3_bucket", "s3_env", "slurm", "tiny_vllm", "tiny_llamacpp"}
# words in the reason of a skip that waits for one
ENGINE_SKIPS = ("chromium", ".venv-vllm", ".llama-cpp", "slurm", "docker")
ENGINE_IMPORTS = {"docker_engine", "slurm_support", "slurm_cluster"}
NOT_FAST = {"subprocess", "multiprocessing", "clirun", "terminal", "torch", "docker", "s3server", "streaming_server",
            "fake_runcrate", "test_launch_support", "sweep_support", "gpubench.workloads", "gpubench.run.runner",
            "gpubench.run.worker", *ENGINE_IMPORTS}


@functools.cache  # asked once per test item, by the markers and the scheduler: parse each file once
def imports(source: str) -> frozenset[str]:
    """Every module a test module imports, anywhere in it, with each of its parents (a.b.c: a, a.b, a.b.c)."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "importorskip" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found = [node.args[0].value]  # pytest.importorskip("torch") imports it as surely as `import torch`
        else:
            continue
        for name in found:
            parts = name.split(".")
            names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(names)


def _needs_engine(item, source: str) -> bool:
    if ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())) or ENGINE_IMPORTS & imports(source):
        return True
    reasons = [str(mark.kwargs.get("reason", "")) for mark in item.iter_markers("skipif")]
    return any(word in reason for reason in reasons for word in ENGINE_SKIPS)


def _fast(source: str) -> bool:
    return not NOT_FAST & imports(source)


def pytest_ignore_collect(collection_path, config):
    """`-m fast` imports only the modules that can hold fast tests (the rest import torch, which takes a while)."""
    name = collection_path.name
    if config.option.markexpr == "fast" and name.startswith("test_") and name.endswith(".py"):
        return not _fast(source_of(Path(collection_path)))
    return None


# pytest-xdist (`-n` in pyproject.toml) sends a test file's tests to one worker, in order, so its module fixtures (a
# smoke run, a server) start once. The files that use one of these engines go to one worker together: their tests
# assume they have the engine to themselves (the Slurm cluster's one node, one Docker engine's images and
# containers), or share a server that a session starts once per worker (the tiny vLLM, the tiny llama-server: one
# start, stopped by the last of its files). A file is in a group when it imports the group's helper or a test of it
# takes the group's fixture (a word in a comment or a string is not enough).
# (xdist's own --dist loadgroup does not group under pytest 9, which no longer reads Item._nodeid.)
SHARED_ENGINE_GROUPS = {"slurm": {"slurm_support", "slurm_cluster"}, "docker": {"docker_engine"},
                        "vllm": {"tiny_vllm"}, "llamacpp": {"tiny_llamacpp"}}


@functools.cache
def source_of(path: Path) -> str:
    """A test module's text, read once (the layer rule and the scheduler both read it)."""
    return path.read_text() if path.is_file() else ""


@functools.cache
def fixtures_taken(source: str) -> frozenset[str]:
    """The parameter names of a module's functions: the fixtures its tests and its own fixtures take."""
    import ast

    return frozenset(arg.arg for node in ast.walk(ast.parse(source))
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for arg in node.args.args)


def xdist_group(path: Path) -> str:
    """The group a test file's tests run in: its shared engine's, else the file's own."""
    source = source_of(path)
    if not source:
        return str(path)
    used = imports(source) | fixtures_taken(source)
    for group, names in SHARED_ENGINE_GROUPS.items():
        if used & names:
            return group
    return str(path)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":  # another --dist asked for on the command line: xdist's own
        return None
    from xdist.scheduler import LoadScopeScheduling

    class EngineGroups(LoadScopeScheduling):
        """--dist loadfile, with the shared-engine files as one file each, handed out in the order the workers
        collected them (`start_order`), not xdist's most-tests-first."""

        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(config.rootpath / nodeid.split("::", 1)[0])

        def schedule(self) -> None:
            self.config.option.loadscopereorder = False
            super().schedule()

    return EngineGroups(config, log)


def start_order(path: Path) -> int:
    """When a test file starts under xdist: the engine groups first, longest first (the Slurm and Docker groups
    wait on their engine much of the time, so they overlap the other worker's work; each is one long unit that
    must not start last), then the files that run processes, then the fast layer's short files, which fill the
    end so the workers finish together."""
    group = xdist_group(path)
    if group in SHARED_ENGINE_GROUPS:
        return list(SHARED_ENGINE_GROUPS).index(group)
    return len(SHARED_ENGINE_GROUPS) + _fast(source_of(path))


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = getattr(item.module, "__file__", None)
        source = source_of(Path(path)) if path else ""
        if _needs_engine(item, source):
            item.add_marker(pytest.mark.engine)
        elif _fast(source):
            item.add_marker(pytest.mark.fast)
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike, the scheduler keeps this order
        items.sort(key=lambda item: start_order(Path(item.path)))  # stable: a file's tests keep theirs
