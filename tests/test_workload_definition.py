"""The workload contract is read once, through WorkloadDefinition: a part missing, misspelled or of the wrong kind is
an error naming the parts, and a part left out gets its one default."""

from __future__ import annotations

import dataclasses
import types

import pytest

from gpubench.catalog import WORKLOADS, CostBasis, WorkloadSpec
from gpubench.workload import PARTS, MetricDef, WorkloadDefinition, WorkloadError, load

SPEC = WorkloadSpec(name="toy", title="t", study="s", setups=("a", "b"), gpus="any", gpu_count=0,
                    min_gpu_memory_gb=0, expected_minutes=1, dependencies={}, module="toy_module",
                    cost=CostBasis(metric="items_per_s", unit="1k items", per=1e3))


@dataclasses.dataclass
class Config:
    n: int = 3


def module(**parts) -> types.ModuleType:
    """A workload module holding the required parts, changed by `parts` (None removes one)."""
    made = types.ModuleType("toy_module")
    values = {"Config": Config, "SMOKE": {"n": 1}, "METRICS": {"items_per_s": MetricDef("items/s", "higher")},
              "run_setup": lambda setup, config, ctx: {"items_per_s": 1.0}, **parts}
    for name, value in values.items():
        if callable(value) and not isinstance(value, type):
            value.__module__ = made.__name__  # as if written there: imported names are not read as parts
        if value is not None:
            setattr(made, name, value)
    return made


def test_a_module_with_the_required_parts_gets_the_defaults_of_the_rest():
    definition = WorkloadDefinition.from_module(SPEC, module())
    assert definition.setups == {"a": None, "b": None}  # the catalog's names, no recipes
    assert definition.headline == () and definition.setup_notes == {} and definition.timed_phases is None
    assert definition.processes_for("a", Config()) == 1 and definition.derive is None
    assert definition.weights(["a"], Config()) == []
    assert definition.notes(Config()) == []
    noted = WorkloadDefinition.from_module(SPEC, module(table_notes=lambda config: [f"n={config.n}"]))
    assert noted.notes(Config()) == ["n=3"]


def test_a_misspelled_part_is_an_error_naming_the_part_meant_and_all_of_them():
    with pytest.raises(WorkloadError) as err:
        WorkloadDefinition.from_module(SPEC, module(HEADLNE=["items_per_s"]))
    assert "defines HEADLNE" in str(err.value) and "did you mean HEADLINE?" in str(err.value)
    assert all(part in str(err.value) for part in PARTS)
    with pytest.raises(WorkloadError, match="did you mean session_key"):
        WorkloadDefinition.from_module(SPEC, module(sesion_key=lambda setup, config: "k"))


@pytest.mark.parametrize("part", [name for name, required in PARTS.items() if required])
def test_a_missing_required_part_is_named(part):
    with pytest.raises(WorkloadError, match=f"does not define {part}; a workload defines Config, SMOKE"):
        WorkloadDefinition.from_module(SPEC, module(**{part: None}))


@pytest.mark.parametrize(("parts", "message"), [
    ({"SETUPS": {"a": 1}}, "SETUPS must be the catalog's setups of 'toy' in its order; missing b"),
    ({"SETUPS": {"b": 1, "a": 2}}, "in its order"),
    ({"SETUPS": {"a": 1, "b": 2, "c": 3}}, "not in the catalog c"),
    ({"SMOKE": {"m": 1}}, "SMOKE sets 'm', which is not a Config field; fields: n"),
    ({"METRICS": {"items_per_s": ("items/s", "higher")}}, r"METRICS\['items_per_s'\] must be a MetricDef"),
    ({"METRICS": {"other": MetricDef("x")}}, "cost metric 'items_per_s' is not in METRICS"),
    ({"SETUP_NOTES": {"z": "?"}}, "SETUP_NOTES names z"),
    ({"open_session": lambda key, config, ctx: None}, "open_session needs session_key"),
    ({"SETUPS": ("a", "b")}, "SETUPS maps each setup name to its recipe"),
    ({"derive": {"a": 1}}, "derive must be a function"),
    ({"Config": dict}, "Config must be a dataclass"),
])
def test_a_part_of_the_wrong_kind_is_an_error(parts, message):
    with pytest.raises(WorkloadError, match=message):
        WorkloadDefinition.from_module(SPEC, module(**parts))


def test_every_catalog_workload_loads_through_the_definition():
    for spec in WORKLOADS:
        definition = load(spec)
        assert definition.spec is spec and tuple(definition.setups) == spec.setups
