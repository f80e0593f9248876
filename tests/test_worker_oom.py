"""Every way the worker claims to recognise "the setup did not fit" (CUDA OOM, cuBLAS alloc failure,
the CPU allocator, a plain MemoryError) is an `oom` row; failures that merely mention memory are errors."""

from __future__ import annotations

import pytest

from gpubench.run.worker import failure, is_oom, one_line
from gpubench.workload import SetupSkipped

torch = pytest.importorskip("torch")


class WrappedOom(torch.OutOfMemoryError):
    """A library's own subclass of torch's OOM, with nothing said in its message."""


OOMS = {
    "torch OutOfMemoryError": torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
    "torch.cuda alias": torch.cuda.OutOfMemoryError("Tried to allocate 20.00 MiB"),
    "a subclass, silent": WrappedOom(),
    "old torch RuntimeError": RuntimeError("CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 79.15 GiB)"),
    "cuBLAS alloc failure": RuntimeError(
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"),
    "CPU allocator": RuntimeError(
        "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you tried to "
        "allocate 100000000000000 bytes. Error code 12 (Cannot allocate memory)"),
    "plain MemoryError": MemoryError(),
    "MemoryError with text": MemoryError("cannot allocate"),
    "a MemoryError subclass": type("ArenaExhausted", (MemoryError,), {})("arena"),
    "an OutOfMemoryError by name only": type("OutOfMemoryError", (Exception,), {})(),
    "a name that says it": type("CudaOutOfMemoryError", (Exception,), {})(),
}

NOT_OOMS = {
    "a bad shape": ValueError("bad shape"),
    "memory mentioned": RuntimeError("expected a contiguous memory format"),
    "a CUDA launch failure": RuntimeError("CUDA error: an illegal memory access was encountered"),
    "a cuBLAS execution failure": RuntimeError("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling cublasGemm"),
    "out of range": IndexError("index out of range"),
}


@pytest.mark.parametrize("name", OOMS)
def test_each_claimed_oom_path_is_an_oom_row(name):
    exc = OOMS[name]
    assert is_oom(exc)
    status, error = failure(exc)
    assert status == "oom" and error == one_line(exc)


@pytest.mark.parametrize("name", NOT_OOMS)
def test_other_failures_are_errors(name):
    assert not is_oom(NOT_OOMS[name])
    assert failure(NOT_OOMS[name])[0] == "error"


def test_the_real_cpu_allocator_failure_is_oom():
    with pytest.raises(RuntimeError) as cpu:
        torch.empty(10**15, dtype=torch.uint8)
    assert failure(cpu.value)[0] == "oom"


def test_a_skip_is_neither(capsys):
    assert failure(SetupSkipped("needs 4 GPUs")) == ("skipped", "needs 4 GPUs")
    assert "Traceback" not in capsys.readouterr().err  # a skip is no crash: no traceback in the log
    try:
        raise MemoryError()
    except MemoryError as exc:  # the worker classifies inside its except block
        assert failure(exc)[0] == "oom"
    assert "Traceback" in capsys.readouterr().err  # a failure's traceback goes to the raw log


def test_one_line_keeps_the_first_line_and_the_type():
    assert one_line(RuntimeError("first line\nsecond")) == "RuntimeError: first line"
    assert one_line(MemoryError()) == "MemoryError"
    assert one_line(ValueError("ends in X: ")) == "ValueError: ends in X"
    assert one_line(ValueError("  \n")) == "ValueError"
    assert one_line(ValueError("x" * 600)) == ("ValueError: " + "x" * 600)[:500]
