"""A local fake of the Runcrate GPU-cloud API (jobs, instances, SSH keys) plus per-instance sshds."""

from .fake import FakeRuncrate
from .server import RecordedRequest

__all__ = ["FakeRuncrate", "RecordedRequest"]
