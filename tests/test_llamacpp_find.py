"""Which llama.cpp build `gpubench run` starts: the setting, $GPUBENCH_LLAMACPP_DIR, the source tree's .llama-cpp/,
PATH; and a clear word when there is none."""

from __future__ import annotations

import json
import stat

import pytest

from gpubench.servers import llamacpp
from gpubench.servers.process import ServerFailed


def build(folder, commit="0c1e57098bba43ac29e6e3b677cdceebdd22334f", info=True):
    """A prefix as tools/llamacpp_build.sh lays it out, its llama-server a script that prints a version."""
    (folder / "bin").mkdir(parents=True)
    server = folder / "bin" / "llama-server"
    server.write_text(f"#!/bin/sh\necho 'version: 0 ({commit[:7]})' >&2\n")
    server.chmod(server.stat().st_mode | stat.S_IXUSR)
    if info:
        (folder / "build-info.json").write_text(json.dumps({"version": "0.5.0", "commit": commit, "cuda": None,
                                                             "cpu": "native"}))
    return folder


@pytest.fixture
def nothing_built(tmp_path, monkeypatch):
    monkeypatch.setattr(llamacpp, "source_prefix", lambda: tmp_path / "no-source-tree" / ".llama-cpp")
    monkeypatch.delenv(llamacpp.DIR_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_the_setting_then_the_variable_then_the_source_tree_then_path(nothing_built, monkeypatch):
    tmp = nothing_built
    source, env, setting, on_path = (build(tmp / name) for name in ("source", "env", "setting", "path"))
    monkeypatch.setattr(llamacpp, "source_prefix", lambda: source)
    monkeypatch.setenv("PATH", str(on_path / "bin"))
    assert llamacpp.find().bin_dir == source / "bin"
    monkeypatch.setenv(llamacpp.DIR_ENV, str(env))
    assert llamacpp.find().bin_dir == env / "bin"
    assert llamacpp.find(str(setting / "bin")).bin_dir == setting / "bin"  # a bin folder itself is taken too
    monkeypatch.delenv(llamacpp.DIR_ENV)
    monkeypatch.setattr(llamacpp, "source_prefix", lambda: tmp / "gone")
    found = llamacpp.find()
    assert found.bin_dir == on_path / "bin" and found.build["version"] == "0.5.0"


def test_a_fresh_clone_finds_the_newest_cached_build_that_runs(nothing_built):
    cache = llamacpp.build_cache()
    old, new, broken = (build(cache / key) for key in ("old", "new", "broken"))
    for folder, when in ((old, "2026-12-01"), (new, "2026-12-02"), (broken, "2026-12-03")):
        info = json.loads((folder / "build-info.json").read_text())
        (folder / "build-info.json").write_text(json.dumps({**info, "built_at": when}))
    (broken / "bin" / "llama-server").write_text("#!/bin/sh\nexit 127\n")  # e.g. CUDA's libraries missing here
    assert llamacpp.find().bin_dir == new / "bin"


def test_none_found_says_how_to_build_it(nothing_built):
    with pytest.raises(llamacpp.LlamaCppNotFound) as err:
        llamacpp.find()
    assert "bash tools/llamacpp_build.sh" in str(err.value) and llamacpp.DIR_ENV in str(err.value)
    assert llamacpp.installed_version() is None


def test_a_named_folder_without_a_server_is_refused_by_name(nothing_built):
    (nothing_built / "empty").mkdir()
    with pytest.raises(ServerFailed, match="empty.*holds no executable llama-server"):
        llamacpp.find(str(nothing_built / "empty"))


def test_version_from_build_info_else_from_the_program(nothing_built):
    with_info = llamacpp.find(str(build(nothing_built / "a")))
    assert with_info.version() == "0.5.0 (0c1e570, CPU, native)"
    without = llamacpp.find(str(build(nothing_built / "b", commit="1234567abc", info=False)))
    assert without.build == {} and without.version() == "0 (1234567)"


def test_every_engine_a_catalog_entry_names_has_a_version_reader(nothing_built, monkeypatch):
    from gpubench.catalog import WORKLOADS
    from gpubench.servers import engines

    named = {name for spec in WORKLOADS for name in spec.engines}
    assert "llama.cpp" in named and named <= set(engines.VERSIONS)
    monkeypatch.setenv(llamacpp.DIR_ENV, str(build(nothing_built / "built")))
    assert engines.versions(["llama.cpp"]) == {"llama.cpp": "0.5.0 (0c1e570, CPU, native)"}
