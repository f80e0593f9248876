"""Config fields declare their meaning and allowed values beside their defaults; one checker reads them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from gpubench import config_fields
from gpubench.catalog import WORKLOADS
from gpubench.config_fields import DEVICE, ConfigError, param
from gpubench.workload import build_config, load


@dataclass
class Config:
    batch: int = param(4, "sequences per step", min=1)
    lr: float = param(1e-4, "learning rate", min=0, max=1)
    dtype: str = param("bfloat16", "the dtype", choices=("bfloat16", "float32"))
    device: str = param("auto", "where it runs", **DEVICE)
    compile: bool = param(True, "torch.compile")
    limit: int | None = param(None, "a cap; none: no cap", min=1)
    scale: float = param(1.0, "a factor, any finite one")
    ways: int = param(1, "how many ways", choices=(1, 2, 4))


@pytest.mark.parametrize("name, text, value", [
    ("batch", "8", 8), ("lr", "0.5", 0.5), ("dtype", "float32", "float32"), ("device", "cuda:1", "cuda:1"),
    ("compile", "off", False), ("compile", "true", True), ("limit", "none", None), ("limit", "3", 3),
    ("scale", "-2.5", -2.5), ("ways", "2", 2),
])
def test_good_values_parse_to_the_fields_type(name, text, value):
    assert config_fields.parse(Config, name, text) == value


@pytest.mark.parametrize("name, text, line", [
    ("batch", "-4", "--set batch=-4: batch must be an integer >= 1"),
    ("batch", "0", "--set batch=0: batch must be an integer >= 1"),
    ("batch", "2.5", "--set batch=2.5: batch must be an integer >= 1"),
    ("lr", "2", "--set lr=2: lr must be a number from 0 to 1"),
    ("lr", "nan", "--set lr=nan: lr must be a number from 0 to 1"),
    ("lr", "-inf", "--set lr=-inf: lr must be a number from 0 to 1"),
    ("dtype", "float99", "--set dtype=float99: dtype must be one of bfloat16, float32"),
    ("device", "tpu", "--set device=tpu: device must be auto (cuda when available, else cpu), cpu, cuda or cuda:N"),
    ("device", "cpux", "--set device=cpux: device must be auto (cuda when available, else cpu), cpu, cuda or cuda:N"),
    ("compile", "maybe", "--set compile=maybe: compile must be true or false"),
    ("compile", "2", "--set compile=2: compile must be true or false"),
    ("scale", "inf", "--set scale=inf: scale must be a number"),
    ("scale", "nan", "--set scale=nan: scale must be a number"),
    ("ways", "3", "--set ways=3: ways must be one of 1, 2, 4"),
    ("limit", "0", "--set limit=0: limit must be an integer >= 1, or none"),
    ("nosuch", "1", "--set nosuch: unknown config field of this workload; valid: batch, lr, dtype, device, compile,"
                    " limit, scale, ways"),
])
def test_a_bad_value_names_the_field_the_value_and_what_it_takes(name, text, line):
    with pytest.raises(ConfigError) as error:
        config_fields.parse(Config, name, text)
    assert str(error.value) == line


def test_check_reads_the_built_config():
    config_fields.check(Config())
    with pytest.raises(ConfigError, match="config batch=0: batch must be an integer >= 1"):
        config_fields.check(Config(batch=0))
    with pytest.raises(ConfigError, match="config dtype='float16': dtype must be one of bfloat16, float32"):
        config_fields.check(Config(dtype="float16"))
    with pytest.raises(ConfigError, match="config batch='4': batch must be an integer >= 1"):
        config_fields.check(Config(batch="4"))  # a default or SMOKE value of the wrong type


@pytest.mark.parametrize("spec", list(WORKLOADS), ids=lambda s: s.name)
def test_every_workload_declares_every_field_and_its_defaults_and_smoke_obey(spec):
    module = load(spec)
    for field in dataclasses.fields(module.config):
        declared = config_fields.declaration(field)
        assert declared is not None and declared.meaning, f"{spec.name}: {field.name} has no declaration"
    build_config(module, False, {})  # raises on a default outside its own declaration
    build_config(module, True, {})
    assert set(module.smoke) <= {f.name for f in dataclasses.fields(module.config)}
