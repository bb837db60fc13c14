"""The declaration format for protocol messages: fields, versions, nullability, tags, defaults.

A message is a tuple of fields. Each field says which versions carry it, in which versions it may
be null, whether it is a tagged field (KIP-482) and its default. Version ranges are written as
``"3+"`` (3 and later), ``"0-7"`` (inclusive), ``"5"`` or ``"none"``.

    F("throttle_time_ms", "int32", "1+")
    F("cluster_id", "string", "12+", nullable="12+", default=None, tag=0)
    A("topics", "0+", [F("name", "string"), ...])        # array of structs
    S("current_leader", "12+", [...], tag=1)              # single struct

Scalar types: int8 int16 int32 int64 uint16 uint32 float64 bool uuid string bytes records.
Arrays of scalars are written ``"[]int32"``; arrays of structs use `A`, single structs `S`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafka_spark.protocol.primitives import FIXED_CODES, ZERO_UUID

MAX_VERSION = 0x7FFF

SCALAR_TYPES = frozenset({*FIXED_CODES, "uuid", "string", "bytes", "records"})

_UNSET: Any = object()


class Versions(NamedTuple):
    """An inclusive version range; empty when ``lo > hi``."""

    lo: int
    hi: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        """True if no version is in the range."""
        return self.lo > self.hi

    def __and__(self, other: tuple[int, int]) -> Versions:
        return Versions(max(self.lo, other[0]), min(self.hi, other[1]))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


NO_VERSIONS = Versions(1, 0)


def parse_versions(spec: str | None) -> Versions:
    """Parse ``"3+"``, ``"0-7"``, ``"5"`` or ``"none"``/None into a `Versions`."""
    if spec is None or spec == "none":
        return NO_VERSIONS
    spec = spec.strip()
    if spec.endswith("+"):
        return Versions(int(spec[:-1]), MAX_VERSION)
    lo, sep, hi = spec.partition("-")
    return Versions(int(lo), int(hi) if sep else int(lo))


@dataclass(frozen=True)
class Field:
    """One declared field. `type` is a scalar type, ``"[]<scalar>"``, ``"struct"`` or ``"[]struct"``."""

    name: str
    type: str
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    default: Any = None
    fields: tuple[Field, ...] = ()

    @property
    def is_struct(self) -> bool:
        """True for a single nested struct."""
        return self.type == "struct"

    @property
    def is_array(self) -> bool:
        """True for any array type."""
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        """The element type of an array field."""
        return self.type[2:]

    def make_default(self) -> Any:
        """A fresh copy of the default value (lists and dicts are never shared)."""
        return copy.deepcopy(self.default) if isinstance(self.default, (list, dict)) else self.default


_SCALAR_DEFAULTS: dict[str, Any] = {
    "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID, "bool": False, "float64": 0.0,
}


def _scalar_default(type_: str) -> Any:
    return _SCALAR_DEFAULTS.get(type_, 0)


def _tagging(tag: int | None, tagged: str | None, versions: Versions) -> Versions:
    if tag is None:
        if tagged is not None:
            raise ValueError("tagged versions given without a tag")
        return NO_VERSIONS
    return parse_versions(tagged) if tagged is not None else versions


def F(
    name: str,
    type_: str,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    default: Any = _UNSET,
    tag: int | None = None,
    tagged: str | None = None,
) -> Field:
    """Declare a scalar field or an array of scalars."""
    elem = type_[2:] if type_.startswith("[]") else type_
    if elem not in SCALAR_TYPES or (elem == "records" and type_ != elem):
        raise ValueError(f"field {name!r}: unknown type {type_!r}")
    vers = parse_versions(versions)
    if default is _UNSET:
        default = [] if type_.startswith("[]") else _scalar_default(type_)
    return Field(name, type_, vers, parse_versions(nullable), tag, _tagging(tag, tagged, vers), default)


def _struct_field(
    name: str, type_: str, versions: str, fields: Iterable[Field], nullable: str | None,
    tag: int | None, tagged: str | None, default: Any,
) -> Field:
    subfields = tuple(fields)
    vers = parse_versions(versions)
    if default is _UNSET:
        default = [] if type_ == "[]struct" else {f.name: f.make_default() for f in subfields}
    return Field(name, type_, vers, parse_versions(nullable), tag, _tagging(tag, tagged, vers), default, subfields)


def A(
    name: str,
    versions: str,
    fields: Iterable[Field],
    *,
    nullable: str | None = None,
    default: Any = _UNSET,
    tag: int | None = None,
    tagged: str | None = None,
) -> Field:
    """Declare an array of structs."""
    return _struct_field(name, "[]struct", versions, fields, nullable, tag, tagged, default)


def S(
    name: str,
    versions: str,
    fields: Iterable[Field],
    *,
    nullable: str | None = None,
    default: Any = _UNSET,
    tag: int | None = None,
    tagged: str | None = None,
) -> Field:
    """Declare a single nested struct."""
    return _struct_field(name, "struct", versions, fields, nullable, tag, tagged, default)


@dataclass(frozen=True)
class Message:
    """A request or response body: its fields and the versions in which it is flexible."""

    name: str
    fields: tuple[Field, ...]
    flexible: Versions


@dataclass(frozen=True)
class Api:
    """One API: key, name, the version range this package speaks, request and response."""

    key: int
    name: str
    versions: Versions
    request: Message
    response: Message

    def message(self, kind: str) -> Message:
        """The ``"request"`` or ``"response"`` message."""
        if kind == "request":
            return self.request
        if kind == "response":
            return self.response
        raise ValueError(f"kind must be 'request' or 'response', not {kind!r}")


def api(
    key: int,
    name: str,
    versions: str,
    *,
    flexible: str | None,
    request: Sequence[Field],
    response: Sequence[Field],
) -> Api:
    """Declare an API; the flexible range applies to both request and response."""
    flex = parse_versions(flexible)
    result = Api(
        key,
        name,
        parse_versions(versions),
        Message(f"{name}Request", tuple(request), flex),
        Message(f"{name}Response", tuple(response), flex),
    )
    validate(result.request.fields, flex, result.request.name)
    validate(result.response.fields, flex, result.response.name)
    return result


def validate(fields: Sequence[Field], flexible: Versions, where: str) -> None:
    """Reject duplicate names or tags and tags outside flexible versions."""
    names: set[str] = set()
    tags: set[int] = set()
    for f in fields:
        if f.name in names:
            raise ValueError(f"{where}: duplicate field {f.name!r}")
        names.add(f.name)
        if f.tag is not None:
            if f.tag in tags:
                raise ValueError(f"{where}: duplicate tag {f.tag}")
            tags.add(f.tag)
            outside = f.tagged & (0, flexible.lo - 1)
            if not f.tagged.empty and (flexible.empty or not outside.empty):
                raise ValueError(f"{where}.{f.name}: tagged in non-flexible versions")
        if f.fields:
            validate(f.fields, flexible, f"{where}.{f.name}")
