"""A real Slurm cluster for tests: Debian's slurm-wlm (slurmctld + slurmd) and munge, as one node on loopback.

The node has no GPUs. It declares two GPU gres types (`gpu:h100:1`, `gpu:l40s:1`), each on a stand-in device
file (slurmd drops a GPU gres without one: a link to /dev/null or /dev/zero), and two partitions, `h100` and
`l40s`, standing for two GPU types: a job asks for its partition and `--gres=gpu:TYPE:1` exactly as on a real
cluster, and the controller schedules, holds (a second job on one gres waits with reason Resources), times out,
cancels and reports it itself.

Everything lives in one temporary folder with its own munge key and socket and free ports, so it touches no
system configuration. It must run as root (slurmd starts jobs as their user). Run as a script, it prints the
path of its slurm.conf on the first line and serves until killed; `.ci/run` starts it so and exports
GPUBENCH_TEST_SLURM_CONF, and the tests reuse it (`cluster()`), or start their own when the variable is absent.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV = "GPUBENCH_TEST_SLURM_CONF"
PARTITIONS = {"h100": "gpu:h100", "l40s": "gpu:l40s"}  # partition -> the gres its jobs ask for
MIN_JOB_AGE = 600  # s an ended job stays in squeue (the tests' sweeps find ended jobs by their comment)


def missing() -> str | None:
    """Why no cluster can be started here, or None."""
    for tool in ("slurmctld", "slurmd", "munged", "sbatch", "squeue"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _daemon(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


@dataclass
class SlurmCluster:
    conf: Path
    workdir: Path | None = None
    processes: list[subprocess.Popen] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """What a Slurm client (sbatch, squeue, the launcher) needs to reach this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    def squeue(self) -> list[str]:
        """The job ids the controller still lists as pending or running."""
        out = subprocess.run(["squeue", "-h", "-o", "%i", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING"],
                             env={**os.environ, **self.env()}, capture_output=True, text=True, check=True)
        return out.stdout.split()

    def set_min_job_age(self, seconds: int) -> None:
        """How long the controller lists an ended job (MinJobAge), changed on the running cluster (`scontrol
        reconfigure`): the tests of a site that forgets jobs fast share the one cluster, and set it back."""
        lines = self.conf.read_text().splitlines()
        new = self.conf.with_suffix(".new")  # replaced whole: slurmd re-reads the file on reconfigure
        new.write_text("\n".join(f"MinJobAge={seconds}" if ln.startswith("MinJobAge=") else ln for ln in lines)
                       + "\n")
        new.chmod(self.conf.stat().st_mode)
        os.replace(new, self.conf)
        env = {**os.environ, **self.env()}
        subprocess.run(["scontrol", "reconfigure"], env=env, check=True, capture_output=True, timeout=60)
        _wait(lambda: _node_idle(env), 60, "the Slurm node after reconfigure", self.conf.parent / "slurmd.log")

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _config(work: Path, host: str, ctld_port: int, slurmd_port: int, cpus: int, memory_mb: int,
            min_job_age: int) -> str:
    gres = ",".join(f"{g}:1" for g in PARTITIONS.values())
    partitions = "\n".join(f"PartitionName={p} Nodes={host} MaxTime=60 State=UP{' Default=YES' if i == 0 else ''}"
                           for i, p in enumerate(PARTITIONS))
    return f"""\
ClusterName=gpubench-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={work}/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool/%n
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
LaunchParameters=use_interactive_step
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge={min_job_age}
KillWait=5
PropagatePrioProcess=1
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
GresTypes=gpu
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} Gres={gres} State=UNKNOWN
{partitions}
"""


def _die_with_parent() -> None:
    """In each daemon before it runs: SIGTERM when the process that started it dies, so a test session killed
    before its teardown (a CI timeout) leaves no cluster behind."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start(timeout: float = 60.0, min_job_age: int = MIN_JOB_AGE) -> SlurmCluster:
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    work = Path(tempfile.mkdtemp(prefix="gpubench-slurm-"))
    os.chmod(work, 0o755)
    for sub in ("munge", "state", "spool"):
        (work / sub).mkdir(mode=0o700)
    key = work / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    conf = work / "slurm.conf"
    conf.write_text(_config(work, host, _free_port(), _free_port(), cpus, 1024, min_job_age))
    (work / "spool" / host).mkdir()
    # slurmd drops a GPU gres without a device file: each stands on a character device that is no GPU.
    (work / "dev").mkdir()
    lines = []
    for n, (gres, device) in enumerate(zip(PARTITIONS.values(), ("/dev/null", "/dev/zero"), strict=True)):
        (work / "dev" / f"gpu{n}").symlink_to(device)
        lines.append(f"NodeName={host} Name=gpu Type={gres.split(':')[1]} File={work}/dev/gpu{n}\n")
    (work / "gres.conf").write_text("".join(lines))
    cluster = SlurmCluster(conf=conf, workdir=work)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    try:
        cluster.processes.append(subprocess.Popen(
            [_daemon("munged"), "--foreground", "--force", f"--socket={work}/munge/munge.socket",
             f"--key-file={key}", f"--log-file={work}/munge/munged.log", f"--pid-file={work}/munge/munged.pid",
             f"--seed-file={work}/munge/munged.seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent))
        _wait(lambda: (work / "munge" / "munge.socket").exists(), timeout, "munged", work / "munge" / "munged.log")
        cluster.processes.append(subprocess.Popen([_daemon("slurmctld"), "-D", "-i", "-f", str(conf)], env=env,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                  start_new_session=True, preexec_fn=_die_with_parent))
        cluster.processes.append(subprocess.Popen([_daemon("slurmd"), "-D", "-N", host, "-f", str(conf)], env=env,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                  start_new_session=True, preexec_fn=_die_with_parent))
        _wait(lambda: _node_idle(env), timeout, "the Slurm node", work / "slurmd.log", cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _node_idle(env: dict) -> bool:
    out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
    states = out.stdout.split()
    return out.returncode == 0 and bool(states) and all(s == "idle" for s in states)


def _wait(ready, timeout: float, what: str, log: Path, cluster: SlurmCluster | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        dead = [p for p in (cluster.processes if cluster else []) if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            tail = log.read_text(errors="replace").splitlines()[-5:] if log.exists() else []
            raise RuntimeError(f"{what} did not come up: " + " | ".join(tail))
        time.sleep(0.3)


def cluster_from_env() -> SlurmCluster | None:
    conf = os.environ.get(ENV)
    return SlurmCluster(conf=Path(conf)) if conf else None


def main() -> None:
    def stop(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)  # from here on, even while starting: the daemons are stopped on the way out
    cluster = start()
    print(cluster.conf, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
