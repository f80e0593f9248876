"""VllmServer.stop on a real vLLM (the CPU build in .venv-vllm/): nothing of the server is left, its port is free.

It stops the server the server tests share (tests/vllm_support.py); named to run after them, so that they find it
still running (a test after this one gets a fresh one).
"""

from __future__ import annotations

import socket

import pytest
from vllm_support import ABSENT, VLLM_PYTHON

from gpubench.servers.process import group_members

pytestmark = pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=ABSENT)


def test_stop_leaves_no_process_and_frees_the_port(tiny_vllm):
    server = tiny_vllm.running()
    pgid = server.proc.pid
    assert len(group_members(pgid)) >= 2  # the API server and its engine process
    server.stop()
    assert group_members(pgid) == []
    with socket.socket() as sock:
        assert sock.connect_ex((server.host, server.port)) != 0
