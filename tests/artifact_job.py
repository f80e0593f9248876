"""A job command for the artifact tests: what `gpubench run` does with its records (stdout and the
run folder under $RUNCRATE_OUTPUT_DIR, through the same RunDir), with a chosen pace and padding."""

from __future__ import annotations

import json
import shlex

SCRIPT = r'''
import json, os, sys, time
from gpubench.schema import (Environment, Metric, Progress, RunFinished, RunStarted, SetupResult,
                             summarize_results)
from gpubench.stores import RunDir
spec = json.loads(sys.argv[1])
rid = os.environ["GPUBENCH_RUN_ID"]
run = RunDir.create(os.path.join(os.environ["RUNCRATE_OUTPUT_DIR"], "gpubench-results"), rid, echo=sys.stdout)
run.record(RunStarted(run_id=rid, workload="train-compile", study="s", setups=spec["setups"], repeats=1,
                      smoke=True, config={}, environment=Environment(python="3", platform="test")))
deadline = time.time() + 120  # a test may hold the rest until it says go (a file); a safety net if it never does
while spec.get("wait_for") and not os.path.exists(spec["wait_for"]) and time.time() < deadline:
    time.sleep(0.02)
results = []
for i, setup in enumerate(spec["setups"]):
    run.record(Progress(run_id=rid, phase="timed", setup=setup, done=i, total=len(spec["setups"])))
    for n in range(spec.get("pad_lines", 0)):  # text that fills the log (a capped log drops its middle)
        print(f"padding {setup} {n} " + "x" * 100, flush=True)
    time.sleep(spec.get("sleep_s", 0))
    r = SetupResult(run_id=rid, setup=setup, repeat=1, status="ok",
                    metrics={"tokens_per_s": Metric(value=1000.0 + i, unit="tokens/s", better="higher")})
    results.append(r)
    run.record(r)
run.record(RunFinished(run_id=rid, status="ok", duration_s=1.0, summary=summarize_results(spec["setups"], results)))
run.close()
'''


def artifact_job(setups=("a", "b", "c"), **spec) -> str:
    spec = {"setups": list(setups), **spec}
    return f"python -c {shlex.quote(SCRIPT)} {shlex.quote(json.dumps(spec))}"
