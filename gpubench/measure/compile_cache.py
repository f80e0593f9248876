"""A fresh torch.compile cache for one compiled setup, so its compile time is a new machine's.

inductor and Triton keep what they compiled on disk and reuse it in later processes: without a fresh
folder, every repeat after the first (and every later run on the same machine) times a cache hit, not a
compile. An H200 run of train-compile showed it: 45.8 s for the first compiled step, 5.6 and 6.9 s on the
next two repeats.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def fresh(enabled: bool = True) -> Iterator[str | None]:
    """Point inductor and Triton at an empty folder for the duration (set before the first compile), then
    remove it; the folder's path, or None when not enabled (the existing cache is used)."""
    if not enabled:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="gpubench-compile-")
    saved = {name: os.environ.get(name) for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
    try:
        yield folder
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)
