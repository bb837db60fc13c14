"""Random message values generated from the declarations, for round-trip, oracle and fuzz tests."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from kafka_spark.protocol.compiler import UNKNOWN_TAGS
from kafka_spark.protocol.schema import Field, Message
from kafka_spark.protocol.schemas import APIS

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
_TEXT = ["", "a", "topic-1", "ümlaut", "日本語", "x" * 40, "__consumer_offsets", "grp.0"]


def combos(kinds: Sequence[str] = ("request", "response")) -> Iterator[tuple[int, int, str]]:
    """Every (api key, version, kind) this package declares."""
    for key, spec in sorted(APIS.items()):
        for version in range(spec.versions.lo, spec.versions.hi + 1):
            for kind in kinds:
                yield key, version, kind


def message(api_key: int, kind: str) -> Message:
    """The declared request or response message."""
    return APIS[api_key].message(kind)


def _scalar(type_: str, rng: random.Random) -> Any:
    if type_ in INT_RANGES:
        lo, hi = INT_RANGES[type_]
        pick = rng.random()
        if pick < 0.15:
            return rng.choice((lo, hi, 0, -1 if lo < 0 else 1))
        return rng.randint(max(lo, -1000), min(hi, 100_000)) if pick < 0.7 else rng.randint(lo, hi)
    if type_ == "bool":
        return rng.random() < 0.5
    if type_ == "float64":
        return rng.choice((0.0, -1.5, 3.25, 1e300, rng.random()))
    if type_ == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if type_ == "string":
        return rng.choice(_TEXT) + str(rng.randint(0, 99)) * rng.randint(0, 1)
    if type_ in ("bytes", "records"):
        return rng.randbytes(rng.choice((0, 1, 7, 64, 300)))
    raise AssertionError(type_)


def random_value(
    fields: Sequence[Field], version: int, flexible: bool, rng: random.Random, unknown_tags: bool = True
) -> dict[str, Any]:
    """A random struct value for `version`; fields absent in `version` hold their defaults."""
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            out[f.name] = f.make_default()
            continue
        tagged = flexible and version in f.tagged
        if tagged and rng.random() < 0.3:
            out[f.name] = f.make_default()
        elif version in f.nullable and rng.random() < 0.25:
            out[f.name] = None
        else:
            out[f.name] = _field_value(f, version, flexible, rng, unknown_tags)
    if flexible and unknown_tags and rng.random() < 0.15:
        top = max([f.tag for f in fields if f.tag is not None], default=-1)
        out[UNKNOWN_TAGS] = {top + 1 + rng.randint(0, 40): rng.randbytes(rng.randint(0, 5))}
    return out


def _field_value(f: Field, version: int, flexible: bool, rng: random.Random, unknown_tags: bool) -> Any:
    if f.type == "struct":
        return random_value(f.fields, version, flexible, rng, unknown_tags)
    if f.type == "[]struct":
        return [
            random_value(f.fields, version, flexible, rng, unknown_tags) for _ in range(rng.choice((0, 1, 2, 3)))
        ]
    if f.is_array:
        return [_scalar(f.element, rng) for _ in range(rng.choice((0, 1, 2, 5)))]
    return _scalar(f.type, rng)


def random_body(api_key: int, version: int, kind: str, rng: random.Random, unknown_tags: bool = True) -> dict:
    """A random request or response body for `version`."""
    msg = message(api_key, kind)
    return random_value(msg.fields, version, version in msg.flexible, rng, unknown_tags)
