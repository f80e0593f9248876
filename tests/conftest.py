from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test helpers (s3server, fake_runcrate)

import s3server  # noqa: E402

_bucket_ids = itertools.count()


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
