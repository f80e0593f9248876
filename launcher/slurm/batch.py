"""One sbatch submission on disk: a run's job of its own, or a sweep's array (one task per cell), with its batch
script, the list of its tasks (batch.json: which run each task is), and, per task, Slurm's output file while it
runs and the exit file the script writes when it ends, all in one side folder:

    <results folder>/slurm/<job name>/{job.sbatch, batch.json, slurm-<id>.out, exit-<id>}

where <id> is the job's number, or ARRAY_TASK (`812_3`) for an array's task, as squeue and scancel write it. When a
task ends its output file moves into its run folder (slurm-<id>.out beside results.jsonl, uploaded with it); the
exit file stays (job.json holds what it says). A later call finds every task an earlier one submitted from here.

The script runs `srun` in the background and waits, so the SIGINT Slurm sends the batch shell 60 s before --time
(`--signal=B:INT@60`) is handled at once: the script marks it and passes it to the run's step (`scancel
--signal=INT`), the run stores what it measured, and the exit file says the time limit stopped it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

SIDE_DIR = "slurm"  # beside the run folders (visible: the logs of a running job are where a person looks)
SCRIPT = "job.sbatch"
MANIFEST = "batch.json"
_EXIT = "exit-"


@dataclass
class BatchTask:
    """One run of a batch job: task `index` of an array, or the job itself."""

    batch: Batch = field(repr=False)
    index: int
    run_id: str
    results_dir: Path  # the run folder's parent
    cell: str = ""  # a sweep's cell path (<workload>/<gpu>/<args key>)
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def job_id(self) -> str | None:
        """As squeue and scancel write it: `812_3` for an array's task, `812` for a job of its own."""
        if self.batch.job_id is None:
            return None
        return f"{self.batch.job_id}_{self.index}" if self.batch.array else self.batch.job_id

    @property
    def run_folder(self) -> Path:
        return self.results_dir / self.run_id

    def output(self) -> Path:
        """Slurm's output file: in the side folder while the job runs, in the run folder once it ended."""
        live = self.batch.side / f"slurm-{self.job_id}.out"
        moved = self.run_folder / live.name
        return moved if moved.exists() and not live.exists() else live

    @property
    def exit_file(self) -> Path:
        return self.batch.side / f"{_EXIT}{self.job_id}"

    def ended(self) -> TaskEnd | None:
        return TaskEnd.read(self.exit_file)

    def keep_output(self) -> Path | None:
        """The job ended: its output file (and a copy of the batch script) into the run folder, uploaded with it."""
        live = self.batch.side / f"slurm-{self.job_id}.out"
        if not live.exists():
            return self.output() if self.output().exists() else None
        self.run_folder.mkdir(parents=True, exist_ok=True)
        if self.batch.script_path.exists():
            shutil.copyfile(self.batch.script_path, self.run_folder / SCRIPT)
        return Path(shutil.move(live, self.run_folder / live.name))


@dataclass(frozen=True)
class Submitted:
    """A task of an array this call submitted with others (Slurm.submit_together), as its run's runner is handed
    it: followed as this call's own job (timed from sbatch's answer). Its batch's job_id is None when sbatch refused
    it (`refused` says why) or a Ctrl-C came first."""

    task: BatchTask


@dataclass(frozen=True)
class Earlier:
    """A task an earlier call submitted and left running (Slurm.left_behind): followed again, never submitted."""

    task: BatchTask


@dataclass
class Batch:
    """One sbatch submission: its name (--job-name, and its side folder's), --comment, the sbatch options its tasks
    share, and its tasks (an array with `array`, else one)."""

    name: str
    side: Path  # <results folder>/slurm/<name>/
    comment: str
    options: list[str]
    tasks: list[BatchTask] = field(default_factory=list)
    array: bool = False
    throttle: int = 1
    job_id: str | None = None  # once submitted (an array's own id)
    submitted_at: float | None = None  # monotonic, when this call's sbatch answered (None: an earlier call's)
    refused: str | None = None  # sbatch's reason, once it refused
    submitting: object = field(default=None, repr=False)  # the asyncio.Lock of its one submission (queue.py)
    _created: Path | None = field(default=None, repr=False)  # the first folder write() made

    @property
    def script_path(self) -> Path:
        return self.side / SCRIPT

    @property
    def time_minutes(self) -> int | None:
        """Its --time in minutes, as its options say."""
        for option in self.options:
            if option.startswith("--time=") and option[7:].isdigit():
                return int(option[7:])
        return None

    @property
    def manifest_path(self) -> Path:
        return self.side / MANIFEST

    def add(self, run_id: str, results_dir: Path, command: list[str], env: dict[str, str], cell: str = "") -> BatchTask:
        task = BatchTask(self, len(self.tasks), run_id, results_dir, cell, command, env)
        self.tasks.append(task)
        return task

    def sbatch_options(self) -> list[str]:
        output = f"{self.side}/slurm-%A_%a.out" if self.array else f"{self.side}/slurm-%j.out"
        array = [f"--array=0-{len(self.tasks) - 1}%{self.throttle}"] if self.array else []
        return [f"--job-name={self.name}", f"--comment={self.comment}", *self.options, *array, f"--output={output}"]

    def script(self) -> str:
        lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in self.sbatch_options()),
                 "# gpubench: one run per task. --signal=B:INT reaches this shell only: Slurm's warning before"
                 " --time, passed on to the run's step.",
                 f"side={shlex.quote(str(self.side))}",
                 'if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then id="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}";'
                 ' else id="$SLURM_JOB_ID"; fi',
                 "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)",
                 "limit=false",
                 "trap 'limit=true; scancel --signal=INT \"$SLURM_JOB_ID\"' INT",
                 'case "${SLURM_ARRAY_TASK_ID:-0}" in']
        for task in self.tasks:
            lines.append(f"  {task.index})")
            lines += [f"    export {k}={shlex.quote(v)}" for k, v in sorted(task.env.items())]
            lines += [f"    {shlex.join(task.command)} &", "    ;;"]
        lines += ['  *) echo "gpubench: no run for task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;', "esac",
                  "pid=$!",
                  'wait "$pid"; rc=$?',
                  'if [ "$limit" = true ]; then wait "$pid"; again=$?; [ "$again" -eq 127 ] || rc=$again; fi',
                  "printf '{\"exit_code\": %d, \"started_at\": \"%s\", \"ended_at\": \"%s\", \"time_limit\": %s}\\n'"
                  ' "$rc" "$started" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$limit" > "$side/' + _EXIT + '$id.tmp"',
                  f'mv "$side/{_EXIT}$id.tmp" "$side/{_EXIT}$id"',
                  'exit "$rc"']
        return "\n".join(lines) + "\n"

    def sbatch_line(self) -> str:
        return shlex.join(["sbatch", "--parsable", str(self.script_path)])

    # --- on disk ---------------------------------------------------------------------------------
    def write(self) -> None:
        """The script and the task list, before sbatch (a launcher killed right after it finds the job by name)."""
        self._created = next((p for p in reversed([self.side, *self.side.parents]) if not p.exists()), None)
        self.side.mkdir(parents=True, exist_ok=True)
        self.script_path.write_text(self.script())
        self._save()

    def submitted(self, job_id: str, at: float | None = None) -> None:
        self.job_id, self.submitted_at = job_id, at
        self._save()

    def discard(self) -> None:
        """sbatch refused it: nothing is left behind (nor the folders write() made for it, when they hold no more)."""
        shutil.rmtree(self.side, ignore_errors=True)
        created = self._created
        if created is None or created == self.side:
            return
        for folder in self.side.parents:
            with contextlib.suppress(OSError):
                folder.rmdir()
            if folder == created:
                break

    def _save(self) -> None:
        data = {"name": self.name, "job_id": self.job_id, "array": self.array, "comment": self.comment,
                "tasks": [{"index": t.index, "run_id": t.run_id, "results_dir": str(t.results_dir), "cell": t.cell}
                          for t in self.tasks]}
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, self.manifest_path)

    @classmethod
    def read(cls, side: Path) -> Batch | None:
        """A batch an earlier call wrote here (its tasks without their commands), or None."""
        try:
            data = json.loads((side / MANIFEST).read_text())
            script = (side / SCRIPT).read_text() if (side / SCRIPT).exists() else ""
            options = [ln.removeprefix("#SBATCH ") for ln in script.splitlines() if ln.startswith("#SBATCH ")]
            batch = cls(name=data["name"], side=side, comment=data.get("comment", ""), options=options,
                        array=bool(data["array"]), job_id=data.get("job_id"))
            for t in data["tasks"]:
                batch.tasks.append(BatchTask(batch, int(t["index"]), t["run_id"], Path(t["results_dir"]),
                                             t.get("cell", "")))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return batch


def batches_under(root: Path) -> list[Batch]:
    """Every batch an earlier call submitted from this results folder, oldest first."""
    side_root = root / SIDE_DIR
    if not side_root.is_dir():
        return []
    found = [b for b in (Batch.read(p) for p in sorted(side_root.iterdir()) if p.is_dir()) if b is not None]
    return sorted(found, key=lambda b: int(b.job_id) if (b.job_id or "").isdigit() else 0)


@dataclass(frozen=True)
class TaskEnd:
    """What a task's exit file says: written by its batch script after the run's step ended."""

    exit_code: int
    started_at: str | None = None  # ISO UTC, when the batch script started
    ended_at: str | None = None
    time_limit: bool = False  # Slurm's SIGINT before --time stopped the run

    @property
    def seconds(self) -> float | None:
        if not self.started_at or not self.ended_at:
            return None
        return (_utc(self.ended_at) - _utc(self.started_at)).total_seconds()

    @classmethod
    def read(cls, path: Path) -> TaskEnd | None:
        try:
            text = path.read_text().strip()
        except OSError:
            return None
        if text.lstrip("-").isdigit():  # an older script wrote the exit code alone
            return cls(int(text))
        try:
            data = json.loads(text)
            return cls(int(data["exit_code"]), data.get("started_at"), data.get("ended_at"),
                       bool(data.get("time_limit")))
        except (ValueError, KeyError, TypeError):
            return None


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)



def run_parts(plan, run, store) -> tuple[list[str], list[str]]:
    """A run's sbatch options (what its job asks the scheduler for) and its job command."""
    slurm = plan.settings
    choice = run.candidates[0]
    gpu = slurm.gpu(choice.requested)
    cpus = slurm.cpus(plan.workload, plan.smoke, choice.count)
    options = slurm.sbatch_options(gpu, choice.count, plan.max_runtime_minutes, cpus, slurm.is_exclusive(plan.smoke))
    command = slurm.job_command(plan.command, plan.image, str(Path(plan.results_dir).resolve()),
                                store.url if store else None, cpus)
    return options, command


def task_of_its_own(plan, run, store) -> BatchTask:
    """A run as a batch job of its own (`gpubench-launch NAME --slurm FILE`)."""
    from .plan import comment_for

    root = Path(plan.results_dir).resolve()
    options, command = run_parts(plan, run, store)
    batch = Batch(name=f"gpubench-{run.run_id}", side=root / SIDE_DIR / run.run_id,
                  comment=comment_for(plan.extra_tags, run_id=run.run_id), options=options)
    return batch.add(run.run_id, root, command, run.env, plan.extra_tags.get("gpubench_cell", ""))
