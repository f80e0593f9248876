"""The page cache, without root: evict files from it, see how much of them it holds, read them raw.

`evict` is the study's method (os.posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) on every blob), with an
fsync first: the kernel drops only clean pages, and a checkpoint written moments ago is still dirty.
`resident_fraction` answers what the study could not ("I can't prove the eviction took effect"): it
maps each file without touching it and asks mincore(2) which pages are in memory (through ctypes;
Python has no mincore). `sequential_read` is the study's dd: read the files front to back with large
buffers and time it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

from gpubench.measure import timing

READ_BUFFER = 16 << 20
_PROT_READ, _MAP_SHARED = 0x1, 0x01


def evict(paths: list[Path]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    return libc


def resident_fraction(paths: list[Path]) -> float:
    """The share of the files' pages in the page cache (0..1), from mincore(2). Raises OSError if it can't tell."""
    libc = _libc()
    page = os.sysconf("SC_PAGE_SIZE")
    resident = total = 0
    for path in paths:
        size = path.stat().st_size
        if not size:
            continue
        pages = (size + page - 1) // page
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = libc.mmap(None, size, _PROT_READ, _MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), f"mmap {path.name}: {os.strerror(ctypes.get_errno())}")
            try:
                vec = (ctypes.c_ubyte * pages)()
                if libc.mincore(addr, size, vec) != 0:
                    raise OSError(ctypes.get_errno(), f"mincore {path.name}: {os.strerror(ctypes.get_errno())}")
                flags = bytes(vec)
                resident += pages - flags.count(0)  # only bit 0 is defined: the page is resident
                total += pages
            finally:
                libc.munmap(addr, size)
        finally:
            os.close(fd)
    return resident / total if total else 1.0


def sequential_read(paths: list[Path]) -> tuple[int, float]:
    """(bytes, seconds) to read the files front to back in 16 MiB reads, one after another, as dd does."""
    buffer = bytearray(READ_BUFFER)
    view = memoryview(buffer)
    done = 0
    with timing.Timed(None, None) as reading:
        for path in paths:
            with open(path, "rb", buffering=0) as file:
                while n := file.readinto(view):
                    done += n
    return done, reading.seconds


def filesystem(path: Path) -> dict[str, str]:
    """The mount that holds `path`: its type (ext4, xfs, overlay, tmpfs...) and source, from /proc/self/mounts."""
    target = os.path.realpath(path)
    best = {"type": "unknown", "mount": "", "source": ""}
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return best
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best["mount"]):
            best = {"type": fields[2], "mount": mount, "source": fields[0]}
    return best
