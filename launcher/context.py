"""What every run of one launcher invocation shares: the provider (with its client), pacing, the view, the store,
and the interrupt flag set by Ctrl-C / SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field

from gpubench.stores import S3Store

from .pace import Pace
from .plan import LaunchPlan
from .progress import ProgressView
from .redact import Redactor


@dataclass
class Launch:
    provider: object  # provider.Provider: where the runs go
    plan: LaunchPlan
    pace: Pace
    view: ProgressView
    redact: Redactor
    store: S3Store | None = None
    interrupted: asyncio.Event = field(default_factory=asyncio.Event)
    live: dict[str, str] = field(default_factory=dict)  # run id -> the job (instance, batch job, container) still live
    cap: SharedCap | None = None  # a sweep's max_usd, over all its jobs


@dataclass
class SharedCap:
    """One dollar cap over several jobs: a sweep's max_usd less what its earlier runs cost."""

    limit_usd: float
    costs: dict[str, float] = field(default_factory=dict)  # run id -> cost so far

    def reached(self, run_id: str, cost_usd: float | None) -> bool:
        self.costs[run_id] = cost_usd or 0.0
        return sum(self.costs.values()) >= self.limit_usd


class InterruptHandler:
    """First Ctrl-C (or SIGTERM): set the flag, so every run cancels its machine, confirms it
    stopped and stores what arrived. A second one quits at once, naming what may still run."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, launch: Launch):
        self.launch = launch
        self.count = 0
        self.loop = asyncio.get_running_loop()

    def __enter__(self) -> InterruptHandler:
        for sig in self.SIGNALS:
            self.loop.add_signal_handler(sig, self._handle, sig)
        return self

    def __exit__(self, *exc) -> None:
        for sig in self.SIGNALS:
            self.loop.remove_signal_handler(sig)

    def _handle(self, sig: signal.Signals) -> None:
        self.count += 1
        view = self.launch.view
        if self.count == 1:
            self.launch.interrupted.set()
            view.say(None, f"{sig.name}: cancelling, then storing what arrived (again to quit at once)")
            return
        view.stop()
        live = ", ".join(f"{k}: {v}" for k, v in self.launch.live.items()) or "none known"
        view.say(None, f"{sig.name} again: quitting without confirming. Still running? ({live}) "
                       f"Stop them with: {self.launch.provider.stop_command(self.launch.live)}")
        os._exit(130)

