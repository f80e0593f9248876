#!/usr/bin/env bash
# Mutation testing (mutmut 3) of the modules that compute or move results. A habit, not CI:
#   tools/mutation.sh                 # every module below, one after the other
#   tools/mutation.sh schema stores   # only these
# Each module is mutated in a scratch copy laid out as the installed package (launcher/ and
# workloads/ inside gpubench/), under $MUTATION_WORK (default /tmp/gpubench-mutation/<module>), and
# each mutant is run against that module's own tests only, so a pass fits in an afternoon on 2 cores.
# Worker and CLI subprocesses import the mutated copy too (PYTHONPATH), but mutmut picks the tests
# for a mutant from what ran in the test process: a line only a subprocess runs counts as "no tests".
# Prints, per module, killed/survived/no-tests and the score (killed + timeout) / (total - skipped);
# `cd $MUTATION_WORK/<module> && mutmut results` lists the survivors, `mutmut show NAME` shows one.
# Left out on purpose: tests whose every check runs in a subprocess (they would only slow the pass),
# and tests/test_store_s3.py, which makes a bucket of a fixed name and so cannot run twice on one server.
# MUTATION_EXCLUDE=REGEX leaves the matching test files out (to score the tests as they were before some).
# Needs: .venv/bin/pip install mutmut==3.8.1
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
venv=$repo/.venv/bin
work=${MUTATION_WORK:-/tmp/gpubench-mutation}
children=${MUTATION_CHILDREN:-2}

declare -A FILE=(
  [schema]=gpubench/schema.py [stores]=gpubench/stores.py [runner]=gpubench/run/runner.py
  [worker]=gpubench/run/worker.py [ingest]=gpubench/run/ingest.py [follow]=gpubench/launcher/runcrate/follow.py
  [plan]=gpubench/launcher/plan.py [results]=gpubench/launcher/results.py
)
declare -A TESTS=(
  [schema]="tests/test_schema.py tests/test_schema_summary_stats.py tests/test_schema_record_lines.py tests/test_worker_groups.py tests/test_summary_table.py"
  [stores]="tests/test_store_s3_verify.py tests/test_store_local.py"
  [runner]="tests/test_schema_summary_stats.py tests/test_worker_groups.py tests/test_runner_records.py tests/test_runner_groups.py"
  [worker]="tests/test_worker_oom.py tests/test_worker_records.py tests/test_worker_ranks.py tests/test_worker_groups.py tests/test_run_failures.py"
  [ingest]="tests/test_ingest_record_stream.py tests/test_launch_combined_output.py tests/test_launch_job_basic.py"
  [follow]="tests/test_launch_follow_errors.py tests/test_launch_follow_reader.py tests/test_launch_combined_output.py tests/test_launch_follow_resume.py tests/test_launch_run_commands.py"
  [plan]="tests/test_launch_plan_gpus.py tests/test_launch_plan_job.py tests/test_launch_dry_run.py tests/test_launch_bad_input.py tests/test_launch_job_basic.py"
  [results]="tests/test_launch_results_folder.py tests/test_launch_job_basic.py tests/test_launch_limits.py"
)
ORDER=(schema stores runner worker ingest follow plan results)
modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=("${ORDER[@]}")

[ -x "$venv/mutmut" ] || { echo "mutmut is not installed: $venv/pip install mutmut==3.8.1" >&2; exit 2; }
for m in "${modules[@]}"; do
  [ -n "${FILE[$m]:-}" ] || { echo "unknown module $m (one of: ${ORDER[*]})" >&2; exit 2; }
done

# One S3 server for every mutant's run (the tests reuse it through this variable), as .ci/run does.
if [ -z "${GPUBENCH_TEST_S3_ENDPOINT:-}" ]; then
  s3_log=$(mktemp)
  "$venv/python" tests/s3server.py >"$s3_log" 2>&1 &
  s3_pid=$!
  # s3server.py does not stop its SeaweedFS on SIGTERM: end the server's own processes too.
  trap 'kill $(ps -o pid= --ppid $s3_pid) $s3_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 120); do
    endpoint=$(head -n1 "$s3_log" 2>/dev/null || true)
    case "$endpoint" in http://*) break ;; esac
    kill -0 $s3_pid 2>/dev/null || { cat "$s3_log"; exit 1; }
    sleep 0.5
  done
  export GPUBENCH_TEST_S3_ENDPOINT="$endpoint"
fi

for m in "${modules[@]}"; do
  dir=$work/$m
  rm -rf "$dir"
  mkdir -p "$dir"
  cp -r gpubench tests pyproject.toml "$dir/"
  rm -rf "$dir/gpubench/launcher" "$dir/gpubench/workloads"
  cp -r launcher "$dir/gpubench/launcher"
  cp -r workloads "$dir/gpubench/workloads"
  find "$dir" -name __pycache__ -prune -exec rm -rf {} +
  {
    echo "[mutmut]"
    echo "source_paths = gpubench"
    echo "only_mutate = ${FILE[$m]}"
    # -n 0: under xdist the tests run in worker processes, and mutmut would see every mutant as having no tests
    printf 'pytest_add_cli_args =\n    -p\n    no:cacheprovider\n    -n\n    0\n'
    echo "pytest_add_cli_args_test_selection ="
    for t in ${TESTS[$m]}; do
      [ -f "$t" ] || continue
      [ -n "${MUTATION_EXCLUDE:-}" ] && [[ $t =~ $MUTATION_EXCLUDE ]] && continue
      echo "    $t"
    done
  } >"$dir/setup.cfg"
  echo "== $m: ${FILE[$m]} against: ${TESTS[$m]}" >&2
  # Subprocesses (workers, the CLI) import the mutated copy through a link: mutmut drops sys.path
  # entries that are its own mutants/ folder.
  # mutmut's stats pass ("stats") would make them read its config from their own folder: run them
  # unmutated then (they still run each mutant, whose name comes in MUTANT_UNDER_TEST).
  mkdir -p "$dir/import" && ln -s "$dir/mutants/gpubench" "$dir/import/gpubench"
  printf '%s\n' 'import os' \
    'if os.environ.get("MUTANT_UNDER_TEST") in ("stats", "fail"):' \
    '    os.environ["MUTANT_UNDER_TEST"] = ""' >"$dir/import/sitecustomize.py"
  (cd "$dir" && PYTHONPATH="$dir/import" "$venv/mutmut" run --max-children "$children" >"$dir/run.log" 2>&1) \
    || echo "   mutmut run exited non-zero: see $dir/run.log" >&2
  (cd "$dir" && "$venv/mutmut" export-cicd-stats >/dev/null && "$venv/python" - "$m" <<'EOF'
import json, sys
s = json.load(open("mutants/mutmut-cicd-stats.json"))
tested = s["total"] - s["skipped"]
score = 100 * (s["killed"] + s["timeout"]) / tested if tested else 0.0
print(f"{sys.argv[1]:8} killed {s['killed']:4}  survived {s['survived']:4}  no-tests {s['no_tests']:4}  "
      f"timeout {s['timeout']:3}  total {s['total']:4}  score {score:5.1f}%")
EOF
  )
done
