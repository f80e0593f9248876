"""Plain tables on stdout: the console they print to."""

from __future__ import annotations


def _console():
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=100, highlight=False)
