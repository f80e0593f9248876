"""The real thing end to end: `gpubench run train-compile --smoke` as the job's command, run by the
fake Runcrate as a local process, streamed through the launcher into SeaweedFS, and no secret
anywhere it went."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from test_launch_support import API_KEY, launch, run_folders, secret_texts

fake, launcher_env = support.fake, support.launcher_env


# Slow API clock: the smoke run takes ~30 s on two idle cores, minutes on busy ones; its safety net is 31 API
# minutes (620 s here).
@pytest.mark.parametrize("fake", [{"minute_s": 20.0}], indirect=True)
def test_train_compile_smoke_into_s3(fake, launcher_env, s3, s3_bucket, s3_env, capsys, tmp_path):
    # Two eager setups: the job path is what is tested here; the compiled ones (a minute of CPU) add nothing to it.
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--setups", "eager-sdpa,eager-eager",
                    "--store", f"s3://{s3_bucket}/runs")
    assert result.code == 0, result.stderr

    [submit] = [r for r in fake.requests if r.method == "POST" and r.path == "/api/v1/jobs"]
    assert json.loads(submit.body)["command"] == "gpubench run train-compile --setups eager-sdpa,eager-eager --smoke"

    records = result.records()
    run_id = records[0]["run_id"]
    assert records[0]["kind"] == "run_started" and records[-1]["kind"] == "run_finished"
    assert records[-1]["status"] == "ok"
    assert {r["setup"] for r in records if r["kind"] == "result"} == {"eager-sdpa", "eager-eager"}
    env = records[0]["environment"]
    assert env["launcher"] == "runcrate-job" and env["gpu_requested"] == "L40S"
    assert records[0]["price_usd_per_hour"] == 0.86

    [folder] = run_folders(tmp_path)
    assert folder.name == run_id
    client = s3.client()
    listed = client.list_objects_v2(Bucket=s3_bucket, Prefix=f"runs/{run_id}/")
    names = {o["Key"].rsplit("/", 1)[1] for o in listed.get("Contents", [])}
    assert names == {"results.jsonl", "run.log", "config.json", "job.json"}
    stored = {n: client.get_object(Bucket=s3_bucket, Key=f"runs/{run_id}/{n}")["Body"].read().decode()
              for n in names}
    assert stored["results.jsonl"] == (folder / "results.jsonl").read_text() == result.stdout
    facts = json.loads(stored["job.json"])
    assert facts["status"] == "succeeded" and facts["gpu_type"] == "L40S"
    # gpubench run kept its own copy as job artifacts ($RUNCRATE_OUTPUT_DIR/gpubench-results/).
    assert f"gpubench-results/{run_id}/results.jsonl" in {a["path"] for a in facts["artifacts"]}

    scanned = secret_texts(fake, result.stdout, result.stderr, folders=[folder], objects=stored.values())
    for secret in (API_KEY, s3.secret_key):
        assert not [t for t in scanned if secret in t]
