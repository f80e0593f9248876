"""`gpubench run` on a terminal shows people a live view and the summary, not JSON records; --json still gives
records there; the run folder keeps every record either way. (Pipes get records exactly as before: clirun tests.)"""

from __future__ import annotations

import json

from terminal import on_terminal


def _records_shown(screen: str) -> list[str]:
    return [line for line in screen.splitlines() if line.lstrip().startswith('{"schema_version"')]


def test_terminal_gets_a_live_view_and_the_summary(tmp_path):
    code, screen = on_terminal("gpubench", "run", "first-matmul", "--smoke", cwd=tmp_path)
    assert code == 0, screen[-3000:]
    assert not _records_shown(screen), screen[-3000:]
    assert "--smoke: tests the code path" in screen  # the live panel's banner
    assert "| setup | status |" in screen and "| matmul | ok |" in screen  # the summary table
    (folder,) = (tmp_path / "gpubench-results").iterdir()
    kinds = [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and "result" in kinds
    assert (folder / "summary.md").is_file()


def test_json_forces_records_on_a_terminal(tmp_path):
    code, screen = on_terminal("gpubench", "run", "first-matmul", "--smoke", "--json", cwd=tmp_path)
    assert code == 0, screen[-3000:]
    kinds = [json.loads(line)["kind"] for line in _records_shown(screen)]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
