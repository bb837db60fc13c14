"""Fuzz target of Avro's block path (column-wise decode), registered in targets.py as `avro-block`.

An input is a fetched batch of values: a flags byte (bit 0: FAILFAST instead of PERMISSIVE; the rest: which
schema pair the query reads, `SETS`), then the values, each a 2-byte big-endian length (0xFFFF: a tombstone;
past the end: what is left) and its bytes, Confluent-framed in the seeds with the pair's writer id, the reader's
own id or another pair's writer id. Mutations give hostile varints, lengths and counts inside datums, truncated
and extended datums, broken framing and unknown ids.

The batch goes through `decode_batch` (what read tasks run, with a schema registry on 127.0.0.1) with the block
path on and off (KAFKA_SPARK_AVRO_BLOCK): both must give the same batch (values, errors, raw bytes; NaN is one
value), or the same typed error. Anything else escaping is a finding; the campaign bounds time and memory.
"""

from __future__ import annotations

import json
import os
import random
import struct
import sys
from pathlib import Path
from typing import Any

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

import pyarrow as pa  # noqa: E402
from harness.schema_registry import RegistryServer  # noqa: E402
from unit.formats.avro_random import SchemaMaker, comparable, datum, encode, names, parsed  # noqa: E402

from kafka_spark.errors import KafkaSparkError  # noqa: E402
from kafka_spark.formats.avro.columnar import SWITCH  # noqa: E402
from kafka_spark.formats.columns import decode_batch  # noqa: E402
from kafka_spark.formats.model import RegisteredSchema  # noqa: E402
from kafka_spark.formats.options import payload_options  # noqa: E402
from kafka_spark.formats.plan import PayloadPlan, plan_payloads  # noqa: E402
from kafka_spark.formats.registry.client import registry_for  # noqa: E402
from kafka_spark.formats.registry.wire import frame  # noqa: E402

_NS = "fuzz"
ORDER: dict[str, Any] = {"type": "record", "name": "Order", "namespace": _NS, "fields": [
    {"name": "id", "type": "long"}, {"name": "n", "type": "int"}, {"name": "ok", "type": "boolean"},
    {"name": "name", "type": "string"}, {"name": "raw", "type": "bytes"}, {"name": "f", "type": "float"},
    {"name": "d", "type": ["null", "double"]},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    {"name": "price", "type": {"type": "fixed", "name": "Price", "namespace": _NS, "size": 8,
                               "logicalType": "decimal", "precision": 18, "scale": 4}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "namespace": _NS, "symbols": ["NEW", "PAID"]}},
    {"name": "hash", "type": {"type": "fixed", "name": "Hash", "namespace": _NS, "size": 4}},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "namespace": _NS,
                                                           "fields": [{"name": "sku", "type": "string"},
                                                                      {"name": "qty", "type": "int"}]}}},
    {"name": "address", "type": ["null", {"type": "record", "name": "Address", "namespace": _NS, "fields": [
        {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}]}]},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
]}
# the order read by a later reader: fields removed, added with defaults, promoted, an enum symbol added
EVOLVED: dict[str, Any] = {**ORDER, "fields": [
    {"name": "id", "type": "double"}, {"name": "n", "type": "long"}, {"name": "name", "type": "bytes"},
    {"name": "raw", "type": "string"}, {"name": "f", "type": "double"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "namespace": _NS,
                                "symbols": ["NEW", "GONE", "PAID"]}},
    *[f for f in ORDER["fields"] if f["name"] in ("tags", "attrs", "lines", "ts")],
    {"name": "note", "type": ["null", "string"], "default": None}, {"name": "level", "type": "int", "default": 3},
    {"name": "blob", "type": "bytes", "default": "\u00ff"},
]}
UNION: dict[str, Any] = {"type": "record", "name": "U", "namespace": _NS, "fields": [
    {"name": "v", "type": ["null", "long", "string", {"type": "array", "items": "int"}]},
    {"name": "w", "type": ["int", "long"]}]}


def _random_pair(seed: int) -> tuple[Any, Any]:
    maker = SchemaMaker(random.Random(seed))
    writer = maker.top()
    reader = maker.evolve(writer)
    try:
        parsed(reader)
    except Exception:  # an evolution that is not Avro (it dropped a definition it refers to): read as written
        return writer, writer
    return writer, reader


# (writer, reader) of each query; the first pairs are hand-made, the rest drawn once from fixed seeds
SETS: list[tuple[Any, Any]] = [(ORDER, ORDER), (ORDER, EVOLVED), (UNION, UNION),
                               *(_random_pair(seed) for seed in (11, 12, 13, 14, 15))]
_TOMBSTONE = 0xFFFF


class _Setup:
    """The registry, each pair's schema ids (writer, reader) and its plans (PERMISSIVE, FAILFAST)."""

    def __init__(self) -> None:
        self.server = RegistryServer().__enter__()  # lives as long as the process, as the other targets' servers
        self.ids: list[tuple[int, int]] = []
        self.plans: list[tuple[PayloadPlan, PayloadPlan]] = []
        for i, (writer, reader) in enumerate(SETS):
            client = registry_for(self._options("PERMISSIVE").registry)
            writer_id = client.register(f"avro{i}-writer", RegisteredSchema(json.dumps(writer)))
            reader_id = client.register(f"avro{i}-value", RegisteredSchema(json.dumps(reader)))
            self.ids.append((writer_id, reader_id))
            self.plans.append((plan_payloads(self._options("PERMISSIVE"), (f"avro{i}",)),
                               plan_payloads(self._options("FAILFAST"), (f"avro{i}",))))

    def _options(self, mode: str) -> Any:
        found = payload_options({"valueFormat": "avro", "schema.registry.url": self.server.url, "mode": mode})
        assert found is not None
        return found


_setup: list[_Setup] = []


def _ready() -> _Setup:
    if not _setup:
        _setup.append(_Setup())
    return _setup[0]


def _input(flags: int, values: list[bytes | None]) -> bytes:
    out = bytearray([flags])
    for v in values:
        out += struct.pack(">H", _TOMBSTONE) if v is None else struct.pack(">H", len(v)) + v
    return bytes(out)


def avro_block_seeds(rng: random.Random) -> list[bytes]:
    setup = _ready()
    out = []
    for i, (writer, reader) in enumerate(SETS):
        writer_id, reader_id = setup.ids[i]
        other_id, other_schema = setup.ids[(i + 1) % len(SETS)][0], SETS[(i + 1) % len(SETS)][0]
        good = [frame(writer_id, encode(writer, datum(rng, writer, names(writer)))) for _ in range(8)]
        own = [frame(reader_id, encode(reader, datum(rng, reader, names(reader)))) for _ in range(2)]
        other = frame(other_id, encode(other_schema, datum(rng, other_schema, names(other_schema))))
        flags = i << 1
        out.append(_input(flags, good))
        out.append(_input(flags, [*good[:3], None, *own, good[3], other, *good[4:]]))
        out.append(_input(flags | 1, [good[0], good[1][:-1], good[2] + b"\x00"]))
        # hostile: a count of 2^62 items, a length of 2^31, framing alone, another magic byte, a negative id
        out.append(_input(flags, [good[0], frame(writer_id, bytes.fromhex("feffffffffffffffff7f")),
                                  frame(writer_id, b"\x02\xfe\xff\xff\xff\x0f"), frame(writer_id, b""),
                                  b"\x01" + good[1][1:], b"\x00\xff\xff\xff\xff" + good[1][5:], good[2]]))
    return out


def _values(data: bytes) -> list[bytes | None]:
    values: list[bytes | None] = []
    at = 0
    while at + 2 <= len(data):
        (size,) = struct.unpack_from(">H", data, at)
        at += 2
        if size == _TOMBSTONE:
            values.append(None)
            continue
        values.append(data[at:at + size])
        at += size
    return values


def _decode(batch: pa.RecordBatch, plan: PayloadPlan, switch: str) -> Any:
    before = os.environ.get(SWITCH)
    os.environ[SWITCH] = switch
    try:
        return decode_batch(batch, plan)
    except KafkaSparkError as exc:  # typed: compared with the other path's, then raised
        return exc
    finally:
        if before is None:
            os.environ.pop(SWITCH, None)
        else:
            os.environ[SWITCH] = before


def run_avro_block(data: bytes) -> object:
    """Decode the input's batch with the block path on and off: the same batch, or the same typed error."""
    if not data:
        return None
    setup = _ready()
    plan = setup.plans[(data[0] >> 1) % len(SETS)][data[0] & 1]
    values = _values(data[1:])
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "key": pa.nulls(n, pa.binary()), "value": pa.array(values, pa.binary()), "topic": ["fuzz"] * n,
        "partition": pa.array([0] * n, pa.int32()), "offset": list(range(n))})
    on, off = _decode(batch, plan, "1"), _decode(batch, plan, "0")
    if isinstance(on, KafkaSparkError) or isinstance(off, KafkaSparkError):
        if (type(on), str(on)) != (type(off), str(off)):
            raise AssertionError(f"block path: {on!r:.300}\nper record: {off!r:.300}")
        raise on
    if on.schema != off.schema:
        raise AssertionError(f"schemas differ: {on.schema} != {off.schema}")
    for name in on.schema.names:
        if comparable(on.column(name)) != comparable(off.column(name)):
            raise AssertionError(f"column {name} differs:\nblock path: {on.column(name)!s:.1000}\n"
                                 f"per record: {off.column(name)!s:.1000}")
    return on
