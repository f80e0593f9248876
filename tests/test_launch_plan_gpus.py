"""--gpu values resolved against /instances/types rows (the SDK's own InstanceType): the count after ':',
names matched as Runcrate spells them or close to it, region prefixes, deployment types, the candidate
rows cheapest first, and the one-line refusals that name what is offered."""

from __future__ import annotations

import asyncio

import pytest
from fake_runcrate import FakeRuncrate
from runcrate import AsyncRuncrate
from runcrate.models.instances import InstanceType

from gpubench.launcher.errors import LaunchError
from gpubench.launcher.plan import GpuChoice, split_count
from gpubench.launcher.runcrate.types import match_gpu_name, region_matches, resolve_gpu


def row(id_, gpu, count, region, rate, deployment="container"):
    return InstanceType(id=id_, gpu_type=gpu, gpu_count=count, cpu_cores=8, memory_gb=32, storage_gb=100,
                        region=region, deployment_type=deployment, hourly_rate=rate)


TYPES = [
    row("l40s-eu", "L40S", 1, "eu-west-1", 0.89),
    row("l40s-us", "L40S", 1, "us-east-1", 0.86),
    row("l40s-us2", "L40S", 1, "us-east-2", 0.95),
    row("l40s-vm", "L40S", 1, "us-east-1", 0.80, deployment="vm"),
    row("a100-80", "A100-80GB", 1, "us-east-1", 1.64, deployment="vm"),
    row("a100-80x2", "A100-80GB", 2, "us-east-1", 3.28, deployment="vm"),
    row("a100-80x4", "A100-80GB", 4, "us-west-2", 6.50, deployment="vm"),
    row("rtx", "RTX5090", 1, "us-east-1", 0.69),
]


def resolve(requested, default_count=1, deployment=None, region=None, types=TYPES, client=None):
    return asyncio.run(resolve_gpu(client, requested, types, default_count, deployment, region))


def refused(requested, **kwargs) -> str:
    with pytest.raises(LaunchError) as exc:
        resolve(requested, **kwargs)
    return str(exc.value)


@pytest.mark.parametrize(("requested", "expected"), [
    ("L40S", ("L40S", 3)), (" A100-80GB:2 ", ("A100-80GB", 2)), ("H100:1", ("H100", 1)), ("H100:8", ("H100", 8)),
])
def test_a_count_after_the_colon_else_the_default(requested, expected):
    assert split_count(requested, 3) == expected


@pytest.mark.parametrize("requested", ["H100:0", "H100:9", "H100:x", "H100:", "H100:-1", "H100:2.0"])
def test_a_bad_count_is_refused(requested):
    with pytest.raises(LaunchError) as exc:
        split_count(requested, 1)
    assert str(exc.value) == f"bad --gpu {requested!r}: the count after ':' must be 1 to 8"


@pytest.mark.parametrize("requested", ["", " ", ":2", " :3"])
def test_no_name_is_refused(requested):
    with pytest.raises(LaunchError) as exc:
        split_count(requested, 1)
    assert str(exc.value) == f"bad --gpu {requested!r}: give a GPU name, e.g. L40S or A100-80GB:2"


def test_names_match_exactly_or_without_case_spaces_dashes_and_underscores():
    assert match_gpu_name("L40S", TYPES) == "L40S"
    assert match_gpu_name("l40s", TYPES) == "L40S"
    assert match_gpu_name("a100 80gb", TYPES) == "A100-80GB"
    assert match_gpu_name("A100_80-GB", TYPES) == "A100-80GB"
    assert match_gpu_name("rtx-5090", TYPES) == "RTX5090"
    assert match_gpu_name("A100", TYPES) is None
    twins = [row("a", "A-100", 1, "r", 1.0), row("b", "A100", 1, "r", 1.0)]
    assert match_gpu_name("A100", twins) == "A100"  # the exact spelling wins
    assert match_gpu_name("a_100", twins) is None  # two close spellings: neither is guessed


def test_a_region_is_matched_by_its_start_ignoring_case_and_spaces():
    assert region_matches(None, "us-east-1") and region_matches("", None)
    assert region_matches("us-east", "us-east-1") and region_matches(" US-East-1 ", "us-east-1")
    assert not region_matches("us-west", "us-east-1")
    assert not region_matches("us", None)
    assert not region_matches("east", "us-east-1")


def test_the_rows_of_a_gpu_cheapest_first_with_their_prices():
    choice = resolve("l40s")
    assert (choice.requested, choice.gpu_type, choice.count) == ("l40s", "L40S", 1)
    assert [t.id for t in choice.rows] == ["l40s-vm", "l40s-us", "l40s-eu", "l40s-us2"]
    assert (choice.price, choice.dearest, choice.wire) == (0.80, 0.95, "L40S")
    assert (choice.rate_in("eu-west-1"), choice.rate_in("us-east-1"), choice.rate_in("mars-1")) == (0.89, 0.80, None)
    assert choice.rate_in(None) is None and choice.rate_in("") is None


def test_a_count_picks_the_rows_of_that_size():
    choice = resolve("A100-80GB:2")
    assert ([t.id for t in choice.rows], choice.count, choice.wire) == (["a100-80x2"], 2, "A100-80GB:2")
    assert resolve("A100-80GB", default_count=4).wire == "A100-80GB:4"
    empty = GpuChoice(requested="x", gpu_type="X", count=1, rows=())
    assert (empty.price, empty.dearest, empty.rate_in("us-east-1")) == (None, None, None)


def test_deployment_and_region_narrow_the_rows():
    assert [t.id for t in resolve("L40S", deployment="container").rows] == ["l40s-us", "l40s-eu", "l40s-us2"]
    assert [t.id for t in resolve("L40S", deployment="vm").rows] == ["l40s-vm"]
    assert [t.id for t in resolve("L40S", region="us-east").rows] == ["l40s-vm", "l40s-us", "l40s-us2"]
    assert [t.id for t in resolve("L40S", deployment="container", region="EU").rows] == ["l40s-eu"]


def test_what_is_not_offered_is_refused_naming_what_is():
    assert refused("A100-80GB:3") == "no A100-80GB with 3 GPU(s) in /instances/types; counts offered: 1, 2, 4"
    assert refused("RTX5090", deployment="vm") == "no vm-type RTX5090 in /instances/types; vm types: A100-80GB, L40S"
    assert refused("L40S", deployment="baremetal") == ("no baremetal-type L40S in /instances/types; "
                                                       "baremetal types: none")
    assert refused("L40S", region="ap") == ("no L40S in region 'ap'; regions offering it: eu-west-1, us-east-1, "
                                            "us-east-2")
    assert refused("A100-80GB:4", region="us-east") == ("no A100-80GB with 4 GPU(s) in /instances/types; "
                                                        "counts offered: 1, 2")


def test_a_name_the_api_knows_by_another_spelling():
    # The fake answers /instances/types?gpu_type=h100-sxm with its H100 rows, as the API does.
    with FakeRuncrate() as fake:
        async def resolve_with_api(requested, fail_lookup=False):
            async with AsyncRuncrate(api_key=fake.api_key, base_url=fake.base_url, max_retries=0) as client:
                types = await client.instances.list_types()
                if fail_lookup:
                    fake.inject("GET", "/api/v1/instances/types", 500)
                try:
                    return await resolve_gpu(client, requested, types, 1)
                except LaunchError as exc:
                    return str(exc)

        choice = asyncio.run(resolve_with_api("h100-sxm"))
        assert (choice.gpu_type, [t.gpu_count for t in choice.rows]) == ("H100", [1])
        said = asyncio.run(resolve_with_api("B200"))
        assert said == "unknown GPU 'B200'; valid: A100, A100-80GB, A4000, H100, L40S, RTX5090"
        said = asyncio.run(resolve_with_api("h100-sxm", fail_lookup=True))  # the lookup failed: not known
        assert said == "unknown GPU 'h100-sxm'; valid: A100, A100-80GB, A4000, H100, L40S, RTX5090"
