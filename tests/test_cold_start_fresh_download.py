"""A fresh download, then a start from the cache it filled, as the study ran them, end to end.

fresh-download removes the model's folder from the Hub cache, fetches the files over HTTP, loads them
and generates a token; cache-warm then starts from that same cache (the study's weights path: the
folder found in $HF_HUB_CACHE, checked online with snapshot_download, nothing fetched again).

The hub here is a small local server speaking the requests snapshot_download makes (the model's revision
JSON, its file tree, then HEAD and GET of each file under /<repo>/resolve/<commit>/), serving a random tiny
checkpoint under the smoke config's model name. No xet headers are sent, so the client downloads over HTTP.
"""

import hashlib
import json
from pathlib import Path

import pytest
from clirun import gpubench
from local_http import QuietHandler, serving

from gpubench.workloads import cold_start
from gpubench.workloads.cold_start import checkpoint as cold_start_checkpoint

REPO = cold_start.SMOKE["model_id"]
COMMIT = "c0ffee" * 6 + "c0de"


def _oid(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _hub(files: dict[str, bytes], gets: list[str]):
    class Hub(QuietHandler):
        def do_HEAD(self):
            self._answer(body=False)

        def do_GET(self):
            self._answer(body=True)

        def _answer(self, body: bool):
            path = self.path.split("?")[0]
            headers = {}
            if path.startswith(f"/api/models/{REPO}/revision/"):
                data = json.dumps({"id": REPO, "modelId": REPO, "sha": COMMIT, "private": False,
                                   "siblings": [{"rfilename": name} for name in files]}).encode()
                headers["Content-Type"] = "application/json"
            elif path.startswith(f"/api/models/{REPO}/tree/"):
                data = json.dumps([{"type": "file", "path": name, "size": len(content), "oid": _oid(content)}
                                   for name, content in files.items()]).encode()
                headers["Content-Type"] = "application/json"
            elif path.startswith(f"/{REPO}/resolve/") and path.split("/", 5)[-1] in files:
                name = path.split("/", 5)[-1]
                data = files[name]
                headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{_oid(data)}"'}
                if body:
                    gets.append(name)
            else:
                self.answer(404, b"")
                return
            self.send_response(200)
            for key, value in {**headers, "Content-Length": str(len(data))}.items():
                self.send_header(key, value)
            self.end_headers()
            if body:
                self.wfile.write(data)

    return Hub


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory):
    served = tmp_path_factory.mktemp("served")
    cold_start_checkpoint.write(served, cold_start_checkpoint.Shape(
        hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128, vocab_size=1024, shards=2))
    snapshot = next((cold_start_checkpoint.repo_folder(served) / "snapshots").iterdir())
    files = {f.name: f.read_bytes() for f in sorted(snapshot.iterdir())}
    files["README.md"] = b"not in allow_patterns: never fetched\n"
    gets: list[str] = []
    cwd = tmp_path_factory.mktemp("run")
    cache = cwd / "cache"
    # A previous download of the same commit: the run finds it (so cache-warm has weights to start from),
    # and the fresh download must remove it first.
    repo_dir = cache / "hub" / f"models--{REPO.replace('/', '--')}"
    stale = repo_dir / "snapshots" / COMMIT
    stale.mkdir(parents=True)
    (stale / "left-over").write_text("a previous download")
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(COMMIT)
    with serving(_hub(files, gets)) as hub:
        result = gpubench("run", "cold-start", "--smoke", "--setups", "fresh-download,cache-warm",
                          "--price", "0.54", "--set", f"cache_dir={cache}", "--set", "checkpoint=auto", cwd=cwd,
                          env={"HF_ENDPOINT": hub, "HF_HUB_CACHE": str(cache / "hub")})
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    return result, rows, files, gets, stale


def test_the_fresh_download_ran_every_phase(fresh_run):
    result, rows, *_ = fresh_run
    assert result.code == 0, result.stderr[-3000:]
    row = rows["fresh-download"]
    assert row["status"] == "ok", row["error"]
    m = {k: v["value"] for k, v in row["metrics"].items()}
    phases = m["import_s"] + m["download_s"] + m["load_to_gpu_s"] + m["first_token_s"]
    assert phases <= m["total_s"] < phases + 0.5
    assert m["download_pct"] == pytest.approx(100 * m["download_s"] / m["total_s"], rel=1e-9)
    assert m["usd_per_start"] == pytest.approx(0.54 * m["total_s"] / 3600, rel=1e-9)
    assert row["info"]["preloaded_modules"] == [] and row["info"]["missing_keys"] == []
    assert row["info"]["HF_XET_HIGH_PERFORMANCE"] == ""


def test_the_cache_folder_was_removed_and_every_allowed_file_fetched(fresh_run):
    _, rows, files, gets, stale = fresh_run
    allowed = sorted(name for name in files if name.endswith((".json", ".safetensors", ".txt")))
    assert sorted(gets) == allowed
    assert not (stale / "left-over").exists()
    m = {k: v["value"] for k, v in rows["fresh-download"]["metrics"].items()}
    assert m["download_gb"] * 1e9 == sum(len(files[name]) for name in allowed)
    assert m["download_mbps"] == pytest.approx(m["download_gb"] * 1e3 / m["download_s"], rel=1e-9)
    assert Path(rows["fresh-download"]["info"]["snapshot"]).name == COMMIT


def test_the_cached_start_loaded_the_downloaded_files_without_fetching_them(fresh_run):
    _, rows, *_ = fresh_run
    warm = rows["cache-warm"]
    assert warm["status"] == "ok", warm["error"]
    assert warm["info"]["checkpoint"]["source"] == "hub cache"
    assert warm["info"]["cache_check"].startswith("online against http://127.0.0.1")
    assert warm["info"]["snapshot"] == rows["fresh-download"]["info"]["snapshot"]
    m = {k: v["value"] for k, v in warm["metrics"].items()}
    assert m["checkpoint_gb"] == rows["fresh-download"]["metrics"]["checkpoint_gb"]["value"]
    assert m["resident_at_start_pct"] > 95 and m["raw_read_gbps"] > 0


def test_cached_starts_are_compared_with_the_fresh_download(fresh_run):
    result, rows, *_ = fresh_run
    derived = [r for r in result.records() if r["kind"] == "derived"]
    assert [d["setup"] for d in derived] == ["cache-warm"]
    fresh = rows["fresh-download"]["metrics"]["total_s"]["value"]
    warm = rows["cache-warm"]["metrics"]["total_s"]["value"]
    assert derived[0]["metrics"]["saved_vs_fresh_s"]["value"] == pytest.approx(fresh - warm, rel=1e-9)
    assert derived[0]["metrics"]["speedup_vs_fresh"]["value"] == pytest.approx(fresh / warm, rel=1e-9)
