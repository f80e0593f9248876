"""A workload's config fields, each declared beside its default: its meaning and the values it takes.

    @dataclass
    class Config:
        batch: int = param(4, "sequences per training step", min=1)
        dtype: str = param("bfloat16", "the weights' and activations' dtype", choices=DTYPES)

The field's type is its annotation (int, float, str, bool, or one of them | None). Pydantic checks and converts the
values against the declarations for `gpubench run --set` and `--check` (which the launcher runs before it asks the
API for anything); `gpubench show` prints each field's meaning and allowed values from them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError

# Declarations many workloads share: param("auto", "where it runs", **DEVICE), param("bfloat16", "...", choices=DTYPES)
DEVICE = {"pattern": r"auto|cpu|cuda(:\d+)?", "allowed": "auto (cuda when available, else cpu), cpu, cuda or cuda:N"}
DTYPES = ("bfloat16", "float16", "float32")
NOUNS = {int: "an integer", float: "a number", bool: "true or false", str: "text"}  # the types --set converts to


class ConfigError(ValueError):
    """A bad --set override or config; str() is a one-line message."""


@dataclass(frozen=True)
class Param:
    meaning: str
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    pattern: str | None = None  # the value must match it whole
    allowed: str = ""  # the pattern in words, for people

    def describe(self, kind: type) -> str:
        """The values this field takes, in words: 'an integer >= 1', 'one of a, b'."""
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.allowed:
            return self.allowed
        noun = NOUNS[kind]
        if self.min is not None and self.max is not None:
            return f"{noun} from {self.min:g} to {self.max:g}"
        if self.min is not None:
            return f"{noun} >= {self.min:g}"
        if self.max is not None:
            return f"{noun} <= {self.max:g}"
        return noun

    def annotation(self, kind: type) -> Any:
        """The field's type with its declaration, for pydantic. A number must be finite: NaN passes every range
        check and infinity would run forever."""
        if self.choices is not None:  # converted to the field's type first: --set n=2 is one of (1, 2, 4)
            return Annotated[Literal[self.choices], BeforeValidator(TypeAdapter(kind).validate_python)]
        limits = {"ge": self.min, "le": self.max, "pattern": self.pattern and f"^(?:{self.pattern})$",
                  "allow_inf_nan": False if kind is float else None}
        return Annotated[kind, Field(**{k: v for k, v in limits.items() if v is not None})]


def param(default: Any, meaning: str, *, min: float | None = None, max: float | None = None,  # noqa: A002
          choices: tuple | list | None = None, pattern: str | None = None, allowed: str = "") -> Any:
    """A dataclass field with its declaration; a 0 or "" that means "the study's own" says so in `meaning`."""
    declared = Param(meaning, min, max, tuple(choices) if choices is not None else None, pattern, allowed)
    return dataclasses.field(default=default, metadata={"param": declared})


def declaration(field: dataclasses.Field) -> Param | None:
    return field.metadata.get("param")


def field_type(config_cls: type, name: str) -> type:
    """The field's type, None taken out of an `X | None`."""
    annotation = typing.get_type_hints(config_cls)[name]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation


def optional(config_cls: type, name: str) -> bool:
    return type(None) in typing.get_args(typing.get_type_hints(config_cls)[name])


def fields(config_cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(config_cls)}


def allowed(config_cls: type, name: str) -> str:
    """What `gpubench show` and the error line say a field takes."""
    words = (declaration(fields(config_cls)[name]) or Param("")).describe(field_type(config_cls, name))
    return words + (", or none" if optional(config_cls, name) else "")


@cache
def _validator(config_cls: type, name: str) -> TypeAdapter:
    annotation = (declaration(fields(config_cls)[name]) or Param("")).annotation(field_type(config_cls, name))
    return TypeAdapter(annotation | None if optional(config_cls, name) else annotation)


def parse(config_cls: type, name: str, text: str) -> Any:
    """One `--set name=text`: the field's value, or a ConfigError naming the field, the value and what it takes."""
    known = fields(config_cls)
    if name not in known:
        raise ConfigError(f"--set {name}: unknown config field of this workload; valid: {', '.join(known)}")
    kind = field_type(config_cls, name)
    if kind not in NOUNS:
        raise ConfigError(f"--set {name}: a field of type {kind} cannot be set from the command line")
    if optional(config_cls, name) and text.lower() in ("", "none"):
        return None
    try:
        return _validator(config_cls, name).validate_python(text)
    except ValidationError:
        raise ConfigError(f"--set {name}={text}: {name} must be {allowed(config_cls, name)}") from None


def check(config: Any) -> None:
    """Every field of a built config against its declaration (the defaults and --smoke's values included), each
    already of its field's type: a SMOKE value "4" for an int is refused, not converted."""
    for name in fields(type(config)):
        value = getattr(config, name)
        try:
            _validator(type(config), name).validate_python(value, strict=True)
        except ValidationError:
            raise ConfigError(f"config {name}={value!r}: {name} must be {allowed(type(config), name)}") from None
