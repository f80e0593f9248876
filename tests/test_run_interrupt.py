"""`gpubench run` stopped with Ctrl-C (SIGINT to its whole process group, as a terminal sends it) after
its first result: exit 130, what was measured is kept, summarised as `interrupted`, and uploaded."""

from __future__ import annotations

import json
import os
import signal

from clirun import as_foreground_job, base_env, stopped

from gpubench import exit_codes


def test_ctrl_c_after_the_first_result_keeps_and_uploads_it(tmp_path, s3, s3_bucket):
    def after_the_first_result(proc, line) -> bool:
        if json.loads(line)["kind"] != "result":
            return False
        os.killpg(proc.pid, signal.SIGINT)
        return True

    run = stopped("run", "first-matmul", "--smoke", "--repeats", "20", "--store", f"s3://{s3_bucket}/runs",
                  cwd=tmp_path, env=base_env(s3.env()), stop=after_the_first_result, preexec_fn=as_foreground_job)
    code, err, lines = run.code, run.stderr, run.stdout.splitlines(keepends=True)
    assert code == exit_codes.INTERRUPTED, err[-3000:]
    records = run.records()
    results = [r for r in records if r["kind"] == "result"]
    finished = records[-1]
    assert records[0]["kind"] == "run_started" and finished["kind"] == "run_finished"
    assert finished["status"] == "interrupted"
    assert results and results[0]["status"] == "ok" and len(results) < 20
    [summary] = finished["summary"]
    assert summary["ok_repeats"] >= 1 and summary["metrics"]["warm_matmul_ms"]["n"] == summary["ok_repeats"]

    run_id = records[0]["run_id"]
    folder = tmp_path / "gpubench-results" / run_id
    assert (folder / "results.jsonl").read_text() == "".join(lines)
    assert json.loads((folder / "upload.json").read_text())["status"] == "done"
    stored = s3.client().get_object(Bucket=s3_bucket, Key=f"runs/{run_id}/results.jsonl")["Body"].read().decode()
    assert stored == "".join(lines)
    assert f"uploaded 5 files to s3://{s3_bucket}/runs/{run_id}/" in err
