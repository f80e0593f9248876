"""Code uploads unpacked for the command, and job groups run max_parallel at a time."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import pytest
import runcrate
from fake_runcrate.pytest_fixtures import client, fake  # noqa: F401 - pytest fixtures


def test_uploaded_code_is_unpacked_where_the_command_runs(client, tmp_path):
    (tmp_path / "run.sh").write_text('echo "from $(basename "$(pwd)")"\n')
    upload = client.jobs.uploads.upload(tmp_path)
    assert upload.url is not None
    job = client.jobs.run(command="bash run.sh", gpu_type="A4000", max_runtime_minutes=600,
                          code={"upload_id": upload.upload_id})
    assert job.code["source"] == "upload"
    assert "".join(c.text for c in client.jobs.follow_logs(job.id)) == "from code\n"
    again = client.jobs.uploads.upload(tmp_path)  # same files, same upload, already used: nothing to send
    assert again.upload_id == upload.upload_id and again.url is None


def test_an_unknown_upload_is_refused(client):
    with pytest.raises(runcrate.UnprocessableEntityError):
        client.jobs.run(command="true", gpu_type="A4000", max_runtime_minutes=600, code={"upload_id": "upl_nope"})


def test_a_group_runs_one_job_per_params_entry_max_parallel_at_a_time(fake, client):
    group = client.jobs.run_group(command='echo "$SEED"; sleep 0.2', gpu_type="A4000", max_runtime_minutes=600,
                                  params=[{"SEED": "1"}, {"SEED": "2"}, {"SEED": "3"}], max_parallel=1)
    assert (group.count, group.max_parallel, len(group.jobs)) == (3, 1, 3)
    jobs = [client.jobs.wait(j.id, poll_interval=0.05) for j in group.jobs]
    assert [j.job_index for j in jobs] == [0, 1, 2]
    assert ["".join(c.text for c in client.jobs.follow_logs(j.id)) for j in jobs] == ["1\n", "2\n", "3\n"]
    spans = sorted((j.attempts[0].started_at, j.attempts[0].ended_at) for j in jobs)
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:], strict=False))
    done = client.job_groups.get(group.id)
    assert done.status_counts == {"succeeded": 3}
    assert done.cost_usd == pytest.approx(sum(j.cost_usd for j in jobs), abs=1e-5)
    assert {j.id for j in client.jobs.list(group_id=group.id)} == {j.id for j in jobs}
