"""`gpubench show` explains every study: one line on what each setup is, and each metric's meaning."""

from __future__ import annotations

from clirun import gpubench

from gpubench.catalog import WORKLOADS


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_every_setup_and_metric_is_explained(tmp_path):
    for spec in WORKLOADS:
        proc = gpubench("show", spec.name, cwd=tmp_path)
        assert proc.code == 0, proc.stderr
        setups = _section(proc.stdout, "setups:")
        assert [line.split()[0] for line in setups] == list(spec.setups)
        bare = [line.split()[0] for line in setups if len(line.split()) < 3]
        assert not bare, f"{spec.name}: setups without a note: {bare}"
        metrics = [line for line in _section(proc.stdout, "metrics:") if not line.startswith("  +")]
        unexplained = [line.split()[0] for line in metrics if ": " not in line]
        assert metrics and not unexplained, f"{spec.name}: metrics without help: {unexplained}"
