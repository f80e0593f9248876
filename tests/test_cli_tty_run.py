"""`gpubench run` on a terminal shows people a live view and the summary, not JSON records; --json still gives
records there; the run folder keeps every record either way. (Pipes get records exactly as before: clirun tests.)"""

from __future__ import annotations

import json
import re

from terminal import on_terminal


def _records_shown(screen: str) -> list[str]:
    return [line for line in screen.splitlines() if line.lstrip().startswith('{"schema_version"')]


def summary_table(screen: str) -> list[str]:
    """The end-of-run table's lines: from its header to the live panel's last redraw or the results line."""
    start = [m.start() for m in re.finditer(r"^setup\s+status\s+n\b", screen, re.MULTILINE)][-1]
    lines = []
    for line in screen[start:].splitlines():
        if line.startswith(("run ", "results: ")):
            break
        lines.append(line)
    return lines


def test_terminal_gets_a_live_view_and_the_summary(tmp_path):
    code, screen = on_terminal("gpubench", "run", "first-matmul", "--smoke", cwd=tmp_path)
    assert code == 0, screen[-3000:]
    assert not _records_shown(screen), screen[-3000:]
    assert "--smoke: tests the code path" in screen  # the live panel's banner
    table = summary_table(screen)  # fitted to the terminal
    assert table[0].split()[:3] == ["setup", "status", "n"] and table[2].split()[:2] == ["matmul", "ok"]
    (folder,) = (tmp_path / "gpubench-results").iterdir()
    kinds = [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and "result" in kinds
    assert (folder / "summary.md").is_file()


def test_json_forces_records_on_a_terminal(tmp_path):
    code, screen = on_terminal("gpubench", "run", "first-matmul", "--smoke", "--json", cwd=tmp_path)
    assert code == 0, screen[-3000:]
    kinds = [json.loads(line)["kind"] for line in _records_shown(screen)]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"


def test_the_summary_table_fits_a_narrow_terminal(tmp_path):
    code, screen = on_terminal("gpubench", "run", "first-matmul", "--smoke", cwd=tmp_path, env={"COLUMNS": "60"})
    assert code == 0, screen[-3000:]
    table = summary_table(screen)
    assert max(len(line) for line in table) <= 60, "\n".join(table)
    assert sum(line.split()[:1] == ["setup"] for line in table) >= 2  # columns that do not fit go below
    (folder,) = (tmp_path / "gpubench-results").iterdir()
    assert "| setup | status |" in (folder / "summary.md").read_text()  # the file keeps the markdown
