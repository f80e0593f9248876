"""A local fake of the Runcrate GPU-cloud API (jobs, instances, SSH keys) plus per-instance sshds.

    with FakeRuncrate(minute_s=0.05, follow_hold_s=2.0, queue_s=0.05, start_s=0.05,
                      container_ready_s=0.2) as fake:
        client = Runcrate(api_key=fake.api_key, base_url=fake.base_url)

Jobs run their ``command`` with bash on this machine (cwd: the attempt's workspace, or its
``code/`` dir when the job has code), ``env`` over this process's environment, the venv's bin
first on PATH, plus ``RUNCRATE_OUTPUT_DIR`` and ``RUNCRATE_JOB_ATTEMPT``; with ``run_images=True``, a job whose
``image`` the local Docker engine has runs in a container of it instead (docker_job.py). ``exit N`` fails a job,
a command outliving ``max_runtime_minutes * minute_s`` seconds (``runtime_minute_s`` where set) is ``timed_out``,
and ``fake.fail_machine(id)`` / ``fake.set_capacity(gpu, False)`` / ``fake.inject(...)`` make the rest.
Log chunks are ``{"seq", "ts", "text"}``, as the SDK's model has them: stdout and stderr combined, each
pipe read on its own thread, so a stderr fragment can fall anywhere, even inside a stdout line.

Running instances show ``ip`` 127.0.0.1 and an extra ``ssh_port``: an asyncssh server taking
user ``root`` with the instance's registered key, running commands with bash in the instance's
home (``HOME`` set there), SFTP and scp relative to it.
"""

from .fake import FakeRuncrate
from .server import RecordedRequest

__all__ = ["FakeRuncrate", "RecordedRequest"]
