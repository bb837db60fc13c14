"""Cross-check the non-flexible versions against kafka-python's older hand-written classes
(``kafka.protocol.old``), a transcription of the protocol independent of Kafka's JSON specs."""

from __future__ import annotations

import importlib
import pkgutil
import random
from typing import Any

import kafka.protocol.old as old
import pytest
from kafka.protocol.old.types import Array, BitField, Schema
from protocol_values import message, random_body

from kafka_spark.protocol import decode_body, encode_body, is_flexible
from kafka_spark.protocol.schema import Field
from kafka_spark.protocol.schemas import APIS


def _legacy_classes() -> list[tuple[int, int, str, type]]:
    found = {}
    for info in pkgutil.iter_modules(old.__path__):
        module = importlib.import_module(f"kafka.protocol.old.{info.name}")
        for name, cls in vars(module).items():
            key = getattr(cls, "API_KEY", None)
            version = getattr(cls, "API_VERSION", None)
            if not isinstance(key, int) or not isinstance(version, int) or key not in APIS:
                continue
            kind = "request" if "Request_v" in name else "response" if "Response_v" in name else None
            if kind and version in APIS[key].versions and not is_flexible(key, version):
                found[key, version, kind] = cls
    return [(k, v, kind, cls) for (k, v, kind), cls in sorted(found.items())]


LEGACY = _legacy_classes()


def _positional(schema: Schema, fields: tuple[Field, ...], value: dict[str, Any], version: int) -> list:
    present = [f for f in fields if version in f.versions]
    assert len(present) == len(schema.fields), (schema.names, [f.name for f in present])
    out: list[Any] = []
    for f, kind in zip(present, schema.fields, strict=True):
        v = value[f.name]
        if v is None:
            out.append(None)
        elif f.type == "[]struct" and not isinstance(kind.array_of, Schema):
            # an array of one-field structs written as a plain array (Metadata topics before v10)
            (only,) = [s for s in f.fields if version in s.versions]
            out.append([item[only.name] for item in v])
        elif f.type == "[]struct":
            assert isinstance(kind, Array)
            out.append([_positional(kind.array_of, f.fields, item, version) for item in v])
        elif kind is BitField:
            bits = BitField.from_32_bit_field(v & 0xFFFFFFFF)
            out.append(None if bits == {31} else bits)
        elif f.type in ("bytes", "records"):
            out.append(bytes(v))
        else:
            out.append(v)
    return out


def test_legacy_classes_cover_the_old_versions() -> None:
    covered = {(k, v) for k, v, _, _ in LEGACY}
    assert len(covered) >= 90
    assert {(0, 0), (1, 0), (2, 0), (3, 0), (8, 0), (9, 0), (10, 0), (11, 0), (17, 0)} <= covered


@pytest.mark.parametrize(("api_key", "version", "kind", "cls"), LEGACY, ids=lambda p: getattr(p, "__name__", p))
def test_legacy_classes_agree(api_key: int, version: int, kind: str, cls: type) -> None:
    fields = message(api_key, kind).fields
    rng = random.Random(f"legacy/{api_key}/{version}/{kind}")
    for _ in range(6):
        value = random_body(api_key, version, kind, rng, unknown_tags=False)
        theirs = cls.SCHEMA.encode(_positional(cls.SCHEMA, fields, value, version))
        if kind == "request":
            assert encode_body(api_key, version, kind, value) == theirs
        else:
            assert decode_body(api_key, version, kind, theirs) == value
