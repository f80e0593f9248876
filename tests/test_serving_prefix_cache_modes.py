"""vllm-prefix-cache's two modes are two server sessions that differ by one flag: "on" is vLLM's default (no flag, as
in the study), "off" is --no-enable-prefix-caching; each setup belongs to its mode's session."""

import contextlib

import pytest

from gpubench.servers.vllm import VllmFlags
from gpubench.workloads import vllm_prefix_cache


@pytest.fixture
def sessions_asked(monkeypatch):
    asked = {}

    @contextlib.contextmanager
    def vllm_session(config, ctx, max_model_len, prefix_caching=None, **kwargs):
        asked["max_model_len"], asked["prefix_caching"] = max_model_len, prefix_caching
        yield VllmFlags(model="/w", served_model_name=config.model, prefix_caching=prefix_caching).args()

    monkeypatch.setattr(vllm_prefix_cache.common, "vllm_session", vllm_session)
    return asked


@pytest.mark.parametrize(("mode", "caching", "flags"), [("on", None, set()),
                                                        ("off", False, {"--no-enable-prefix-caching"})])
def test_each_mode_starts_its_server_with_the_studys_flag(sessions_asked, mode, caching, flags):
    config = vllm_prefix_cache.Config()
    with vllm_prefix_cache.open_session(mode, config, ctx=None) as args:
        assert {a for a in args if "prefix-caching" in a} == flags
    assert sessions_asked == {"max_model_len": config.max_model_len, "prefix_caching": caching}


def test_every_setup_is_in_its_modes_session():
    config = vllm_prefix_cache.Config()
    keys = {setup: vllm_prefix_cache.session_key(setup, config) for setup in vllm_prefix_cache.SETUPS}
    assert set(keys.values()) == {"on", "off"}
    assert all(setup.startswith(key + "-") for setup, key in keys.items())
    assert len(keys) == 2 * 2 * len(vllm_prefix_cache.LEVELS)  # on/off x p1000/p4000 x the study's levels
