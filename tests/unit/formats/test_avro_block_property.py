"""Property test of Avro's block path through what read tasks run, `decode_batch` with a registry: random writer
schemas of every Avro type (records nested, named references, enums, arrays, maps, fixed, nullable and
multi-branch unions, every logical type spark-avro reads), random datums with edge values (empty strings, arrays
and maps, 64-bit extremes, NaN and infinities with any payload, unicode), evolution pairs (fields added with
defaults, removed and reordered, int→long→float→double, string↔bytes, enum symbols and union branches added, types
made nullable), corrupt datums, tombstones and records of the reader's own id in the same batch.

Each batch decodes with the block path on and off (KAFKA_SPARK_AVRO_BLOCK=0): the same columns, errors and raw
bytes, floats compared bit for bit except that every NaN is one value. Each record that fastavro reads alone
(writer to reader schema, logical types aside) is also compared with spark-avro's value of fastavro's, computed
here apart from the codec's converters.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import random
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from harness.schema_registry import RegistryServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unit.formats.avro_random import (
    Refused,
    SchemaMaker,
    Skip,
    comparable,
    corrupt,
    datum,
    encode,
    expected,
    names,
    parsed,
)

from kafka_spark.errors import KafkaSparkError
from kafka_spark.formats.avro import columnar
from kafka_spark.formats.avro.columnar import SWITCH
from kafka_spark.formats.columns import decode_batch
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.options import payload_options
from kafka_spark.formats.plan import plan_payloads
from kafka_spark.formats.registry.client import registry_for
from kafka_spark.formats.registry.wire import frame
from kafka_spark.protocol.varint import encode_varint

pytest.importorskip("datafusion")

_UNCHECKED = object()  # a record the oracle has no single value for, which must decode all the same
_MAY_FAIL = object()  # a corrupt record, or one spark-avro refuses: an error or a value, the same by both paths
_topics = itertools.count()


@pytest.fixture(scope="module")
def registry() -> Iterator[RegistryServer]:
    with RegistryServer() as server:
        yield server


# ---- equality ---------------------------------------------------------------------------------------

def assert_same(on: Any, off: Any) -> None:
    """Two decode_batch results (a batch, or the error's type and text) are the same."""
    if isinstance(on, tuple) or isinstance(off, tuple):
        assert on == off
        return
    assert on.schema == off.schema
    for name in on.schema.names:
        assert comparable(on.column(name)) == comparable(off.column(name)), name


# ---- one case ---------------------------------------------------------------------------------------

class Case:
    """A writer schema and a reader schema (the writer's or an evolution of it) registered under a fresh topic,
    a batch of framed records for it (`values`) and what the oracle expects of each (`expected`)."""

    def __init__(self, url: str, writer: Any, reader: Any, mode: str = "PERMISSIVE") -> None:
        self.writer, self.reader = writer, reader
        self.topic = f"prop{next(_topics)}"
        self.options = {"valueFormat": "avro", "schema.registry.url": url, "mode": mode}
        client = registry_for(self.parsed_options().registry)
        self.writer_id = client.register(f"{self.topic}-writer", RegisteredSchema(json.dumps(writer)))
        self.reader_id = client.register(f"{self.topic}-value", RegisteredSchema(json.dumps(reader)))
        self.values: list[bytes | None] = []
        self.expected: list[Any] = []

    def parsed_options(self) -> Any:
        found = payload_options(self.options)
        assert found is not None
        return found

    def oracle(self, payload: bytes, writer: Any) -> Any:
        """spark-avro's value of what fastavro reads from `payload` alone, _UNCHECKED or _MAY_FAIL."""
        try:
            raw = fastavro.schemaless_reader(io.BytesIO(payload), parsed(writer),
                                             None if writer is self.reader else parsed(self.reader))
            return expected(raw, self.reader, names(self.reader))
        except Refused:
            return _MAY_FAIL
        except Skip:
            return _UNCHECKED
        except Exception:  # fastavro refuses the pair or the bytes: the codec's error is checked by the paths' equality
            return _MAY_FAIL

    def batch(self) -> pa.RecordBatch:
        n = len(self.values)
        return pa.RecordBatch.from_pydict({
            "key": pa.nulls(n, pa.binary()), "value": pa.array(self.values, pa.binary()),
            "topic": [self.topic] * n, "partition": pa.array([0] * n, pa.int32()), "offset": list(range(n))})

    def decode(self, switch: str) -> Any:
        """decode_batch's result with the block path `switch`ed, or the error's type and text."""
        plan = plan_payloads(self.parsed_options(), (self.topic,))
        before = os.environ.get(SWITCH)
        os.environ[SWITCH] = switch
        try:
            return decode_batch(self.batch(), plan)
        except KafkaSparkError as exc:
            return type(exc).__name__, str(exc)
        finally:
            if before is None:
                os.environ.pop(SWITCH, None)
            else:
                os.environ[SWITCH] = before

    def check(self) -> None:
        on, off = self.decode("1"), self.decode("0")
        assert_same(on, off)
        if isinstance(on, tuple):  # FAILFAST met a record that may fail
            assert self.options["mode"] == "FAILFAST" and any(e is _MAY_FAIL for e in self.expected), on
            return
        rows = comparable(on.column("value"))
        errors = on.column("valueError").to_pylist() if "valueError" in on.schema.names else [None] * len(rows)
        for i, want in enumerate(self.expected):
            if want is not _MAY_FAIL:
                assert errors[i] is None, (i, errors[i])
            if want is not _MAY_FAIL and want is not _UNCHECKED:
                assert rows[i] == want, (i, rows[i], want)


def random_case(rng: random.Random, url: str, evolve: float = 0.5, damage: float = 0.1) -> Case:
    """A random writer schema, its reader (an evolution with probability `evolve`), and 1-12 records: mostly the
    writer's, some the reader's own, a few tombstones, a share `damage` corrupted."""
    maker = SchemaMaker(rng)
    writer = reader = maker.top()
    if rng.random() < evolve:
        candidate = maker.evolve(writer)
        try:  # an evolution may refer to a definition it dropped: such a reader is not Avro
            parsed(candidate)
            reader = candidate
        except Exception:
            pass
    case = Case(url, writer, reader, "PERMISSIVE" if rng.random() < 0.85 else "FAILFAST")
    for _ in range(rng.randint(1, 12)):
        r = rng.random()
        if r < 0.05:
            case.values.append(None)  # a tombstone
            case.expected.append(None)
            continue
        own = r < 0.15 and reader is not writer
        schema, schema_id = (reader, case.reader_id) if own else (writer, case.writer_id)
        payload = encode(schema, datum(rng, schema, names(schema)))
        if rng.random() < damage:
            payload = corrupt(rng, payload)
            case.expected.append(_MAY_FAIL)
        else:
            case.expected.append(case.oracle(payload, schema))
        case.values.append(frame(schema_id, payload))
    return case


def describe(case: Case) -> str:
    return f"writer {json.dumps(case.writer)}\nreader {json.dumps(case.reader)}\nvalues {case.values!r:.2000}"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rng=st.randoms(use_true_random=False))
def test_block_path_equals_per_record_path_and_fastavro(registry: RegistryServer, rng: random.Random) -> None:
    case = random_case(rng, registry.url)
    try:
        case.check()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{describe(case)}") from None


def test_the_generated_cases_mostly_take_the_block_path(registry: RegistryServer,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The property above proves little if the block path leaves every case to the per-record path: most records
    of clean cases (no corruption) must be decoded column-wise, with and without evolution."""
    taken, seen = 0, 0
    real = columnar.decode_group

    def counting(*args: Any) -> Any:
        found = real(*args)
        nonlocal taken
        taken += 0 if found is None else int(found[0].sum())
        return found

    monkeypatch.setattr(columnar, "decode_group", counting)
    rng = random.Random(20261123)
    for _ in range(60):
        case = random_case(rng, registry.url, damage=0.0)
        seen += sum(v is not None for v in case.values)
        case.check()
    assert taken >= 0.5 * seen, f"the block path took {taken} of {seen} records"


# ---- regressions found by the property test and the fuzz target ---------------------------------------

def test_a_map_with_a_key_twice_keeps_the_last_value_as_per_record(registry: RegistryServer) -> None:
    """The native reader keeps every entry of a map that names a key twice, the per-record path (a dict, like
    Java's HashMap) the key once with its last value: such a group is decoded per record."""
    schema = {"type": "record", "name": "R", "namespace": "p", "fields": [
        {"name": "m", "type": {"type": "map", "values": "long"}}]}
    case = Case(registry.url, schema, schema, mode="FAILFAST")

    def entries(pairs: list[tuple[str, int]]) -> bytes:  # one block of entries, written as they are
        body = b"".join(encode_varint(len(k)) + k.encode() + encode_varint(v) for k, v in pairs)
        return encode_varint(len(pairs)) + body + b"\x00"

    long = [(f"k{i}", i) for i in range(20)]  # past the short-map check: the sorted one
    case.values = [frame(case.writer_id, entries([("k", 1), ("j", 2), ("k", 3)])),
                   frame(case.writer_id, entries([*long, ("k0", 99)])),
                   frame(case.writer_id, encode(schema, {"m": {"a": 1}}))]
    case.expected = [{"m": [("k", 3), ("j", 2)]}, {"m": [("k0", 99), *long[1:]]}, {"m": [("a", 1)]}]
    case.check()
    case.values = case.values[1:]  # the long map alone, in a group of its own
    case.expected = case.expected[1:]
    case.check()


def test_bytes_fixed_and_decimal_defaults_are_their_iso_8859_1_bytes(registry: RegistryServer) -> None:
    """Avro writes a bytes or fixed default as a string of code points 0-255, one per byte: a reader field added
    with one is those bytes (was its UTF-8 text), and one added with a decimal default decodes (was every record
    an error)."""
    writer = {"type": "record", "name": "R", "namespace": "p", "fields": [{"name": "a", "type": "int"}]}
    added = [("b", "bytes", "\u00ff\u0000"),
             ("f", {"type": "fixed", "name": "F", "namespace": "p", "size": 2}, "\u00e9A"),
             ("d", {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}, "\u0001\u0000"),
             ("r", {"type": "record", "name": "S", "namespace": "p", "fields": [{"name": "x", "type": "bytes"}]},
              {"x": "\u0080"}),
             ("n", ["bytes", "null"], "\u00ff"), ("l", {"type": "array", "items": "bytes"}, ["\u00fe", ""])]
    reader = {**writer, "fields": [*writer["fields"], *({"name": n, "type": t, "default": d} for n, t, d in added)]}
    case = Case(registry.url, writer, reader, mode="FAILFAST")
    case.values = [frame(case.writer_id, encode(writer, {"a": i})) for i in range(3)]
    want = {"b": b"\xff\x00", "f": b"\xe9A", "d": Decimal("2.56"), "r": {"x": b"\x80"}, "n": b"\xff",
            "l": [b"\xfe", b""]}
    case.expected = [{"a": i, **want} for i in range(3)]
    case.check()


@pytest.mark.parametrize("field", [
    ["null", "long", "string"], {"type": "fixed", "name": "Z", "namespace": "p", "size": 0},
    {"type": "map", "values": "null"}])
def test_schemas_the_native_reader_always_fails_on_are_left_at_once(registry: RegistryServer, field: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer schema DataFusion cannot read whatever the data is known from the schema: its records go per record
    without the walk and the failed read every batch."""
    schema = {"type": "record", "name": "R", "namespace": "p", "fields": [{"name": "a", "type": field}]}
    case = Case(registry.url, schema, schema)
    rng = random.Random(3)
    for _ in range(5):
        payload = encode(schema, datum(rng, schema, names(schema)))
        case.values.append(frame(case.writer_id, payload))
        case.expected.append(case.oracle(payload, schema))
    reads: list[Any] = []
    real = columnar.read_container
    monkeypatch.setattr(columnar, "read_container", lambda parts, rows: reads.append(parts) or real(parts, rows))
    case.check()
    case.check()
    assert reads == []


@pytest.mark.parametrize("items", ["boolean", "double", {"type": "fixed", "name": "H", "namespace": "p", "size": 2},
                                   {"type": "record", "name": "P", "namespace": "p", "fields": [
                                       {"name": "x", "type": "float"}, {"name": "y", "type": "float"}]}])
def test_a_skipped_array_of_fixed_size_items_ends_with_the_payload(registry: RegistryServer, items: Any) -> None:
    """Skipping a writer field the reader lacks, fastavro's compiled reader read the items of an array of
    fixed-size values past the payload's end without noticing: a count of 2^62 in ten bytes was a hang. Now the
    read stops at the end, and the record's error says what was missing."""
    writer = {"type": "record", "name": "R", "namespace": "p", "fields": [
        {"name": "gone", "type": {"type": "array", "items": items}}, {"name": "a", "type": "long"}]}
    reader = {**writer, "fields": [{"name": "a", "type": "long"}]}
    case = Case(registry.url, writer, reader)
    case.values = [frame(case.writer_id, encode_varint(1 << 20)),  # 2^20 items, and the payload ends there
                   frame(case.writer_id, encode(writer, {"gone": [], "a": 5}))]
    case.expected = [_MAY_FAIL, {"a": 5}]
    case.check()
    errors = case.decode("0").column("valueError").to_pylist()
    assert "read 0" in errors[0] and errors[1] is None


def test_comparable_tells_nan_apart_from_numbers_and_signed_zeros() -> None:
    a = pa.array([math.nan, 0.0, -0.0, None, 1.0], pa.float32())
    b = pa.array(np.array([np.float32("nan")], np.float32).view(np.uint32) | np.uint32(1)).view(pa.float32())
    assert comparable(a)[0] == comparable(b)[0] == "NaN"
    assert comparable(a)[1] != comparable(a)[2]
    assert comparable(pa.array([{"x": [1.5]}, None], pa.struct([("x", pa.list_(pa.float64()))]))) == [
        {"x": [(1.5, 1.0)]}, None]
