"""A compiled setup compiles into an empty inductor/Triton cache of its own, so every repeat times a compile
(an H200 run timed 45.8 s cold and 5.6 s from the cache), and the caller's cache settings come back after."""

import os

from torch._inductor.runtime.cache_dir_utils import cache_dir, triton_cache_dir

from gpubench.measure import compile_cache


def test_inductor_and_triton_use_an_empty_folder_that_is_removed_after(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/of/the/users")
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    with compile_cache.fresh() as folder:
        assert cache_dir() == folder and os.listdir(folder) == []
        assert triton_cache_dir(0) == os.path.join(folder, "triton")
        with compile_cache.fresh() as inner:  # each compiled setup its own
            assert inner != folder and cache_dir() == inner
        assert cache_dir() == folder
    assert not os.path.exists(folder)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/somewhere/of/the/users"
    assert "TRITON_CACHE_DIR" not in os.environ


def test_disabled_leaves_the_existing_cache(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/of/the/users")
    with compile_cache.fresh(False) as folder:
        assert folder is None and cache_dir() == "/somewhere/of/the/users"


def test_train_compile_and_sdxl_compile_cold_by_default():
    from gpubench.workloads import sdxl, train_compile

    assert train_compile.Config().cold_compile_cache and sdxl.Config().cold_compile_cache
