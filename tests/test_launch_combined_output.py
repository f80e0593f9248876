"""A job's log is stdout and stderr combined, in fragments cut anywhere (the API says nothing about which
pipe a chunk came from). Records must come out whole and in order, the other text must go to run.log:
stderr lines between records, text without a newline before a record, a stderr line read in the middle
of a long record, and chunk boundaries at every place."""

from __future__ import annotations

import io
import json
import random
import shlex

import pytest
import test_launch_support as support
from test_launch_support import launch, run_folders

from gpubench.run.ingest import LineAssembler, RecordStream
from gpubench.schema import (
    Environment,
    Metric,
    Progress,
    RunFinished,
    RunStarted,
    SetupResult,
    summarize_results,
    to_line,
)
from gpubench.stores import RunDir

fake, launcher_env = support.fake, support.launcher_env
RUN_ID = "train-compile-20261130T000000Z-c0ffee"


def records(run_id: str = RUN_ID) -> list[str]:
    env = Environment(python="3", platform="test")
    results = [SetupResult(run_id=run_id, setup=s, repeat=1, status="ok", error=None,
                           metrics={f"m{i}": Metric(value=i * 1.5, unit="u", better="higher") for i in range(40)})
               for s in ("eager-sdpa", "compile-sdpa")]
    return [to_line(r) for r in (
        RunStarted(run_id=run_id, workload="train-compile", study="s", setups=["eager-sdpa", "compile-sdpa"],
                   repeats=1, smoke=True, config={"note": 'a "quoted" {"schema_version": no} text'},
                   environment=env),
        Progress(run_id=run_id, phase="timed", setup="eager-sdpa", done=0, total=2),
        *results,
        RunFinished(run_id=run_id, status="ok", duration_s=1.0,
                    summary=summarize_results(["eager-sdpa", "compile-sdpa"], [SetupResult(**r.model_dump())
                                                                              for r in results])),
    )]


def combined(lines: list[str]) -> str:
    """The records as a job prints them, with stderr text put in every awkward place."""
    started, progress, first, second, finished = lines
    cut = len(first) // 2
    return ("W1130 12:00:00 warning: something on stderr\n"
            + started + "\n"
            + " 50%|#####     | 1/2 [00:01<00:01]\r"  # a progress bar: no newline before the next record
            + progress + "stderr between a record and its newline\n" + "\n"  # an unbuffered stdout's print
            + first[:cut] + "stderr line read between the halves\n" + first[cut:] + "\n"
            + second[:1000] + "two whole stderr lines\nin between\n" + second[1000:] + "\n"
            + "plain text with a { brace\n"
            + finished + "\n"
            + "last words without a newline")


def ingest(text: str, cuts: list[int], tmp_path) -> tuple[RecordStream, str, str]:
    run_dir = RunDir.create(tmp_path, f"r{len(list(tmp_path.iterdir()))}", echo=io.StringIO())
    stream = RecordStream(run_dir)
    lines = LineAssembler(stream.feed)
    for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
        lines.feed(text[a:b])
    lines.flush()
    run_dir.close()
    return stream, (run_dir.path / "results.jsonl").read_text(), (run_dir.path / "run.log").read_text()


def test_records_are_found_whole_wherever_the_fragments_are_cut(tmp_path):
    expected = records()
    text = combined(expected)
    rng = random.Random(13)
    cuttings = [[], list(range(1, len(text))), *(sorted(rng.sample(range(1, len(text)), k)) for k in (3, 40, 400))]
    for cuts in cuttings:
        stream, jsonl, log = ingest(text, cuts, tmp_path)
        assert jsonl.splitlines() == expected, f"{len(cuts)} cuts"
        assert stream.outcome == "ok" and [r.setup for r in stream.results] == ["eager-sdpa", "compile-sdpa"]
        assert stream.results[0].metrics["m39"].value == 58.5
        for said in ("W1130 12:00:00 warning: something on stderr", " 50%|#####     | 1/2 [00:01<00:01]",
                     "stderr line read between the halves", "in between", "stderr between a record and its newline",
                     "plain text with a { brace",
                     "last words without a newline"):
            assert said in log, said


def test_a_record_cut_by_several_stderr_lines_is_mended(tmp_path):
    first = records()[2]
    text = first[:777] + "one\ntwo\nthree\n" + first[777:] + "\n"
    stream, jsonl, log = ingest(text, [], tmp_path)
    assert jsonl.splitlines() == [first]
    assert [line for line in log.splitlines() if line in ("two", "three")] == ["two", "three"]
    assert "one" in log


def test_a_broken_line_that_never_ends_stays_text(tmp_path):
    first = records()[2]
    text = first[:500] + "\n" + "\n".join(f"noise {i}" for i in range(30)) + "\n" + first[500:] + "\n"
    stream, jsonl, log = ingest(text, [], tmp_path)
    assert jsonl == "" and stream.results == []  # too far apart to be one record: nothing invented
    assert first[:500] in log.splitlines()


INTERLEAVER = r'''
import json, os, sys, time
from pathlib import Path
lines = Path(sys.argv[1]).read_text().splitlines()
out, err = sys.stdout, sys.stderr
def put(stream, text):
    stream.write(text)
    stream.flush()
    time.sleep(0.01)
put(err, "starting on stderr\n")
put(out, lines[0] + "\n")
put(err, " 50%|#####     | 1/2\r")
for i in range(0, len(lines[1]), 7):  # a record in small pieces: chunks cut inside it
    put(out, lines[1][i:i + 7])
put(out, "\n")
put(out, lines[2][:300])
put(err, "stderr between the halves\n")
put(out, lines[2][300:] + "\n")
put(out, lines[3])
put(err, "stderr before a record's newline\n")
put(out, "\n")
for line in lines[4:]:
    put(out, line + "\n")
put(err, "the end, no newline")
'''


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_a_job_whose_stderr_falls_inside_its_records(fake, launcher_env, capsys, tmp_path):
    # The records carry the launcher's run id, which the job learns only from its environment.
    script = tmp_path / "interleave.py"
    script.write_text(INTERLEAVER)
    wrapper = tmp_path / "job.py"
    wrapper.write_text(
        "import os, subprocess, sys, test_launch_combined_output as t\n"
        "p = os.path.join(os.environ['TMP_LINES'], 'lines.txt')\n"
        "open(p, 'w').write('\\n'.join(t.records(os.environ['GPUBENCH_RUN_ID'])))\n"
        f"sys.exit(subprocess.call([sys.executable, {str(script)!r}, p]))\n")
    tests_dir = str(__import__("pathlib").Path(__file__).parent)
    command = (f"TMP_LINES={shlex.quote(str(tmp_path))} PYTHONPATH={shlex.quote(tests_dir)} "
               f"python {shlex.quote(str(wrapper))}")
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--job-command", command)
    assert result.code == 0, result.stderr
    [folder] = run_folders(tmp_path)
    expected = (tmp_path / "lines.txt").read_text().splitlines()
    assert json.loads(expected[0])["run_id"] == folder.name
    assert result.stdout.splitlines() == expected
    assert (folder / "results.jsonl").read_text().splitlines() == expected
    log = (folder / "run.log").read_text().splitlines()
    for said in ("starting on stderr", " 50%|#####     | 1/2", "stderr between the halves", "the end, no newline",
                 "stderr before a record's newline"):
        assert said in "\n".join(log), said
    assert json.loads(expected[-1])["status"] == "ok"


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_a_whole_log_is_said_complete_and_not_truncated(fake, launcher_env, capsys, tmp_path):
    command = "printf 'one\\ntwo\\nno newline at the end'"
    launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--job-command", command)
    [folder] = run_folders(tmp_path)
    assert (folder / "run.log").read_text().splitlines() == ["one", "two", "no newline at the end"]
    stats = json.loads((folder / "job.json").read_text())["follow"]
    assert (stats["truncated"], stats["complete"], stats["lines"]) == (False, True, 3)
    assert stats["log_requests"] >= 1 and stats["cursor"] >= 1
    assert (stats["log_errors"], stats["rate_limited"]) == (0, 0)
