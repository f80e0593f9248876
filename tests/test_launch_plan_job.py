"""What a launch plan sends and keeps: the job's command, environment, tags and spec, config.json, the
expected and worst-case costs, how the obtained instance's rate corrects the cost metrics, the safety
net's minutes, and the refusals of bad workloads, setups and --set pairs. Prices worked out by hand."""

from __future__ import annotations

import dataclasses
import re

import pytest
from runcrate.models.instances import InstanceType

from gpubench import __version__
from gpubench.catalog import WORKLOADS
from gpubench.launcher.errors import LaunchError
from gpubench.launcher.plan import (
    GpuChoice,
    LaunchPlan,
    RunPlan,
    check_overrides,
    image_digest,
    new_runs,
    resolve_setups,
    resolve_workload,
    run_command,
    safety_net_minutes,
)

EMBED = WORKLOADS.get("embed")  # expected_minutes 12, max_runtime_minutes 39
DIGEST = "sha256:" + "ab" * 32


def choice(gpu, rates, count=1, requested=None):
    rows = tuple(InstanceType(id=f"{gpu}-{region}", gpu_type=gpu, gpu_count=count, cpu_cores=8, memory_gb=32,
                              storage_gb=100, region=region, hourly_rate=rate) for region, rate in rates)
    return GpuChoice(requested=requested or gpu.lower(), gpu_type=gpu, count=count, rows=rows)


L40S = choice("L40S", [("us-east-1", 0.86), ("eu-west-1", 0.89)])  # cheapest first, as resolve_gpu sorts
H100 = choice("H100", [("us-east-1", 2.49), ("us-west-2", 3.10)], count=2, requested="H100:2")
TWIN = choice("RTX5090", [("us-east-1", 0.86)])  # the same cheapest rate as L40S


def plan(**kwargs) -> LaunchPlan:
    args = dict(workload=EMBED, setups=None, smoke=False, repeats=None, via="job",
                image=f"ghcr.io/gpubench/embed@{DIGEST}", command="gpubench run embed", max_runtime_minutes=39,
                runs=[])
    return LaunchPlan(**{**args, **kwargs})


def test_the_job_command_is_a_plain_gpubench_run_with_what_was_passed():
    assert run_command(EMBED, None, False, None) == "gpubench run embed"
    assert run_command(EMBED, ["bge-small-128", "bge-base-512"], True, 3, ("batch=8", "note=a b"), "/w eights") == (
        "gpubench run embed --setups bge-small-128,bge-base-512 --smoke --repeats 3 --set batch=8 --set 'note=a b' "
        "--weights '/w eights'")
    assert run_command(EMBED, [], False, 0, ()) == "gpubench run embed --repeats 0"


@pytest.mark.parametrize("pair", ["batch", "=8", "2x=1", "a b=1", " =1"])
def test_a_bad_set_pair_is_refused(pair):
    with pytest.raises(LaunchError) as exc:
        check_overrides([pair])
    assert str(exc.value) == (f"bad --set {pair!r}: use NAME=VALUE with a config field of the workload "
                              "(gpubench show WORKLOAD lists them)")


def test_good_set_pairs_pass_as_given():
    pairs = ("batch=8", " dtype =bf16", "x=", "expr=a=b")  # the name ends at the first '='
    assert check_overrides(pairs) == list(pairs)


def test_setups_are_picked_in_catalogue_order():
    assert resolve_setups(EMBED, None) is None and resolve_setups(EMBED, "") is None
    assert resolve_setups(EMBED, " bge-base-512, ,bge-small-128,") == ["bge-small-128", "bge-base-512"]
    with pytest.raises(LaunchError) as exc:
        resolve_setups(EMBED, "bge-small-128,bge-huge")
    assert str(exc.value) == (f"unknown setup 'bge-huge'; valid: {', '.join(EMBED.setups)} (workload embed)")


def test_workloads_unknown_or_not_written_are_refused(monkeypatch):
    assert resolve_workload("embed") is EMBED
    with pytest.raises(LaunchError) as exc:
        resolve_workload("embedd")
    assert str(exc.value).startswith("unknown workload 'embedd'; valid: train-compile, embed, ")
    # A catalogued study whose code is not written yet (as several were).
    monkeypatch.setitem(WORKLOADS._items, "later", dataclasses.replace(EMBED, name="later", module=None))
    with pytest.raises(LaunchError) as exc:
        resolve_workload("later")
    implemented = ", ".join(w.name for w in WORKLOADS if w.implemented)
    assert str(exc.value) == f"workload 'later' is catalogued but not implemented yet; implemented: {implemented}"
    monkeypatch.setattr(WORKLOADS, "_items", {"later": WORKLOADS._items["later"]})  # the catalogue's first days
    with pytest.raises(LaunchError) as exc:
        resolve_workload("later")
    assert str(exc.value) == "workload 'later' is catalogued but not implemented yet; implemented: none yet"


def test_an_image_digest_only_from_a_sha256_reference():
    assert image_digest(f"ghcr.io/x/embed@{DIGEST}") == DIGEST
    assert image_digest("ghcr.io/x/embed:0.1.0") is None
    assert image_digest("ghcr.io/x/embed@md5:abc") is None
    assert image_digest("ghcr.io/x/embed@") is None


def test_a_run_of_candidates_names_them_and_prices_them():
    run = RunPlan(run_id="r1", candidates=[L40S, H100])
    assert (run.gpu_requested, run.label, run.price) == ("l40s,H100:2", "L40S|H100:2", None)
    assert RunPlan(run_id="r2", candidates=[L40S, TWIN]).price == 0.86  # one rate for both: it is the price
    assert RunPlan(run_id="r3", candidates=[H100]).price == 2.49
    assert run.rate_obtained("h100:2", "us-west-2") == 3.10
    assert run.rate_obtained("L40S", "eu-west-1") == 0.89
    assert run.rate_obtained("L40S", "mars-1") is None
    assert run.rate_obtained("A100", "us-east-1") is None and run.rate_obtained(None, "us-east-1") is None


def test_the_environment_given_to_the_job():
    single = RunPlan(run_id="r1", candidates=[H100])
    assert plan().env_for(single) == {
        "GPUBENCH_RUN_ID": "r1", "GPUBENCH_LAUNCHER": "runcrate-job", "GPUBENCH_GPU_REQUESTED": "H100:2",
        "GPUBENCH_PRICE_USD_PER_HOUR": "2.49", "GPUBENCH_IMAGE_DIGEST": DIGEST}
    mixed = RunPlan(run_id="r2", candidates=[L40S, H100])
    env = plan(via="instance", image="ghcr.io/x/embed:0.1.0").env_for(mixed)
    assert env == {"GPUBENCH_RUN_ID": "r2", "GPUBENCH_LAUNCHER": "runcrate-instance",
                   "GPUBENCH_GPU_REQUESTED": "l40s,H100:2", "GPUBENCH_PRICES_USD_PER_HOUR": "L40S=0.86,H100:2=2.49"}
    priced = plan(price_override=1.5).env_for(mixed)
    assert priced["GPUBENCH_PRICE_USD_PER_HOUR"] == "1.5" and "GPUBENCH_PRICES_USD_PER_HOUR" not in priced
    assert plan(price_override=0.0).env_for(mixed)["GPUBENCH_PRICE_USD_PER_HOUR"] == "0"


def test_the_job_spec_and_its_tags():
    run = RunPlan(run_id="embed-r1", candidates=[L40S, H100], env={"A": "1"})
    bare = plan().job_spec(run, "cli")
    assert bare == {
        "name": "gpubench-embed-r1", "image": f"ghcr.io/gpubench/embed@{DIGEST}", "command": "gpubench run embed",
        "gpu_type": ["L40S", "H100:2"], "gpu_count": 1, "max_runtime_minutes": 39, "env": {"A": "1"},
        "tags": {"gpubench": "1", "gpubench_run_id": "embed-r1", "gpubench_workload": "embed",
                 "gpubench_launcher": "cli", "gpubench_version": __version__}}
    full = plan(capacity_wait_minutes=0, region="us-east", template="tpl-1").job_spec(run, "cli")
    assert {k: v for k, v in full.items() if k not in bare} == {
        "capacity_wait_minutes": 0, "region": "us-east", "template": "tpl-1"}


def test_config_json_is_the_plan_with_env_names_only():
    run = RunPlan(run_id="embed-r1", candidates=[L40S, H100], env={"Z_SECRET": "v", "A": "w"})
    config = plan(setups=["bge-small-128"], smoke=True, repeats=2, max_cost=3.5, max_minutes=20.0,
                  capacity_wait_minutes=5, region="us", deployment="vm", store_url="s3://b/p", template="t",
                  price_override=1.25).config(run)
    assert config == {
        "run_id": "embed-r1", "workload": "embed", "study": EMBED.study, "setups": ["bge-small-128"], "smoke": True,
        "repeats": 2, "via": "job", "provider": "runcrate", "launcher": "runcrate-job",
        "launcher_version": __version__,
        "gpus": [
            {"requested": "l40s", "gpu_type": "L40S", "count": 1, "usd_per_hour": 0.86,
             "usd_per_hour_by_region": {"eu-west-1": 0.89, "us-east-1": 0.86},
             "instance_types": ["L40S-us-east-1", "L40S-eu-west-1"]},
            {"requested": "H100:2", "gpu_type": "H100", "count": 2, "usd_per_hour": 2.49,
             "usd_per_hour_by_region": {"us-west-2": 3.10, "us-east-1": 2.49},
             "instance_types": ["H100-us-east-1", "H100-us-west-2"]}],
        "image": f"ghcr.io/gpubench/embed@{DIGEST}", "command": "gpubench run embed", "env_keys": ["A", "Z_SECRET"],
        "max_runtime_minutes": 39, "max_cost_usd": 3.5, "max_minutes": 20.0, "capacity_wait_minutes": 5,
        "region": "us", "deployment_type": "vm", "template": "t", "store": "s3://b/p",
        "price_override_usd_per_hour": 1.25}
    assert list(config["gpus"][0]["usd_per_hour_by_region"]) == ["eu-west-1", "us-east-1"]  # dearest first
    assert plan().config(run)["setups"] == list(EMBED.setups)


def test_expected_and_worst_costs():
    run = RunPlan(run_id="r", candidates=[L40S, H100])
    assert plan().expected_cost(run) == pytest.approx(0.86 * 12 / 60)  # first candidate, cheapest region
    assert plan(price_override=3.0).expected_cost(run) == pytest.approx(3.0 * 12 / 60)
    assert plan().worst_cost(run) == pytest.approx(3.10 * 39 / 60)  # the dearest region of any candidate
    bare = RunPlan(run_id="r", candidates=[])
    assert (plan().expected_cost(bare), plan().worst_cost(bare)) == (None, None)
    unpriced = RunPlan(run_id="r", candidates=[GpuChoice(requested="x", gpu_type="X", count=1, rows=())])
    assert (plan().expected_cost(unpriced), plan().worst_cost(unpriced)) == (None, None)


def test_cost_metrics_are_corrected_by_the_rate_obtained():
    run = RunPlan(run_id="r", candidates=[L40S, H100])
    dearer = plan().pricing(run, "H100:2", "us-west-2")
    assert dearer == {"gpu_type": "H100:2", "region": "us-west-2", "priced_at_usd_per_hour": 2.49,
                      "obtained_usd_per_hour": 3.10, "factor": round(3.10 / 2.49, 6),
                      "note": "usd_per_* metrics were priced at $2.49/h; the instance cost $3.1/h in us-west-2:"
                              " multiply them by 1.24498"}
    same = plan().pricing(run, "l40s", "us-east-1")
    assert (same["priced_at_usd_per_hour"], same["factor"], same["note"]) == (
        0.86, 1.0, "costs are at the obtained rate")
    billed = plan().pricing(run, "L40S", "mars-1", cost_per_hour=1.72)  # the job's own bill says the rate
    assert (billed["obtained_usd_per_hour"], billed["factor"]) == (1.72, 2.0)
    unknown = plan().pricing(run, "L40S", "mars-1")
    assert (unknown["obtained_usd_per_hour"], unknown["factor"], unknown["note"]) == (
        None, None, "rate of the obtained instance unknown: costs are at the cheapest region's rate")
    unmatched = plan().pricing(RunPlan(run_id="r", candidates=[L40S, TWIN]), "A100", "us-east-1", 2.58)
    assert (unmatched["priced_at_usd_per_hour"], unmatched["factor"]) == (0.86, 3.0)  # the run's one price
    given = plan(price_override=5.0).pricing(run, "H100:2", "us-west-2")
    assert (given["priced_at_usd_per_hour"], given["obtained_usd_per_hour"], given["factor"], given["note"]) == (
        5.0, 3.10, None, "costs use --price as given")


@pytest.mark.parametrize(("override", "max_minutes", "expected"), [
    (None, None, 39), (90, None, 90), (None, 10.2, 13), (None, 37.0, 39), (None, 36.5, 39), (None, 36.0, 38),
    (0, None, 1), (20000, None, 10080), (None, 0.0, 2), (60, 5.0, 7),
])
def test_the_safety_net_minutes(override, max_minutes, expected):
    assert safety_net_minutes(EMBED, max_minutes, override) == expected


def test_one_run_for_all_gpus_or_one_each():
    [together] = new_runs(EMBED, [L40S, H100], each=False)
    assert together.candidates == [L40S, H100] and together.env == {}
    each = new_runs(EMBED, [L40S, H100], each=True)
    assert [r.candidates for r in each] == [[L40S], [H100]]
    for run in [together, *each]:
        assert re.fullmatch(r"embed-\d{8}T\d{6}Z-[0-9a-f]{6}", run.run_id)
    assert len({r.run_id for r in [together, *each]}) == 3
