"""The block path of Avro (`kafka_spark.formats.avro.columnar`): random schemas and datums, evolution pairs and
corrupt datums decoded column-wise equal the per-record path (fastavro) on every record the block path takes;
the records it leaves are ones the per-record path decodes as before."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unit.formats.avro_schemas import SCHEMAS, corrupted, encode, evolved, raw_value, text

from kafka_spark.errors import PayloadError, SchemaRegistryError
from kafka_spark.formats.avro.codec import avro_decoder
from kafka_spark.formats.avro.columnar import decode_group
from kafka_spark.formats.avro.skip import exact_datums
from kafka_spark.formats.groups import framed_groups
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.registry.wire import frame

pytest.importorskip("datafusion")

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "string"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}]}]},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "score", "type": ["double", "null"]},
]}


class Schemas:
    """Writer schemas by id, in memory: an id not given is unknown, as the registry answers (40403)."""

    def __init__(self, schemas: dict[int, Any]) -> None:
        self.schemas = schemas

    def by_id(self, schema_id: int) -> RegisteredSchema:
        if schema_id not in self.schemas:
            raise SchemaRegistryError(f"schema {schema_id} not found", 404, 40403)
        return RegisteredSchema(text(self.schemas[schema_id]), id=schema_id)

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        raise AssertionError("no references here")


def per_record(decoder: Any, schema_id: int, payloads: list[bytes]) -> list[Any]:
    """What the per-record path gives each payload: its value, or the PayloadError's text."""
    out: list[Any] = []
    for p in payloads:
        try:
            out.append(decoder.decode(schema_id, (), p))
        except PayloadError as exc:
            out.append(PayloadError(str(exc)))
    return out


def check_block(decoder: Any, schema_id: int, payloads: list[bytes]) -> int:
    """Assert the block path's values equal the per-record path's on every record it takes; how many it took."""
    column = pa.array([frame(schema_id, p) for p in payloads], pa.binary())
    expected = per_record(decoder, schema_id, payloads)
    found = decode_group(decoder, schema_id, column)
    if found is None:
        return 0
    exact, values = found
    taken = [e for e, ok in zip(expected, exact, strict=True) if ok]
    assert not any(isinstance(v, PayloadError) for v in taken), "the block path took a record that fails"
    want = pa.array(taken, type=decoder.arrow_type)
    assert values.type == want.type
    assert values.equals(want), values.diff(want)
    return int(exact.sum())


def order_payloads(n: int) -> list[bytes]:
    """`n` orders written by fastavro with the logical types applied."""
    values = [{"id": i, "name": f"n{i}", "amount": decimal.Decimal(i) / 4,
               "ts": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i),
               "day": datetime.date(2024, 1, 1 + i % 28), "tags": ["a", "b"][: i % 3], "attrs": {"k": str(i)},
               "status": ("NEW", "PAID")[i % 2], "address": None if i % 3 else {"city": "c", "zip": None},
               "uid": str(uuid.UUID(int=i)), "score": None if i % 4 else i / 2} for i in range(n)]
    parsed = fastavro.parse_schema(ORDER)
    out = []
    for v in values:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, v)
        out.append(buffer.getvalue())
    return out


ORDER_PAYLOADS = order_payloads(12)


def test_the_block_path_takes_every_type_it_knows_and_equals_fastavro() -> None:
    payloads = order_payloads(500)
    decoder = avro_decoder(RegisteredSchema(json.dumps(ORDER), id=1), Schemas({1: ORDER}))
    assert check_block(decoder, 1, payloads) == len(payloads)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_schemas_and_datums_decode_alike_by_block_and_per_record(data: st.DataObject) -> None:
    schema = data.draw(SCHEMAS)
    payloads = [data.draw(corrupted(encode(schema, raw_value(data.draw, schema))))
                for _ in range(data.draw(st.integers(1, 12)))]
    decoder = avro_decoder(RegisteredSchema(text(schema), id=1), Schemas({1: schema}))
    check_block(decoder, 1, payloads)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_evolution_pairs_decode_alike_by_block_and_per_record(data: st.DataObject) -> None:
    writer = data.draw(SCHEMAS)
    reader = data.draw(evolved(writer))
    payloads = [encode(writer, raw_value(data.draw, writer)) for _ in range(data.draw(st.integers(1, 8)))]
    decoder = avro_decoder(RegisteredSchema(text(reader), id=2), Schemas({1: writer, 2: reader}))
    check_block(decoder, 1, payloads)


def test_evolution_of_the_order_is_taken_by_the_block_path() -> None:
    writer = {**ORDER, "fields": [f for f in ORDER["fields"] if f["name"] in ("id", "name", "status", "score")]}
    reader = {**writer, "fields": [
        {"name": "id", "type": "double"}, {"name": "name", "type": "bytes"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "GONE"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "level", "type": "int", "default": 3}]}
    payloads = [encode(writer, {"id": i, "name": "x" * i, "status": "PAID", "score": 0.5}) for i in range(50)]
    decoder = avro_decoder(RegisteredSchema(text(reader), id=2), Schemas({1: writer, 2: reader}))
    assert check_block(decoder, 1, payloads) == 50


@pytest.mark.parametrize("bad", [
    b"\x02", b"", b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # truncated, empty, an 11-byte varint
    bytes.fromhex("feffffffffffffffff7f"),  # a huge array count in ten bytes
])
def test_corrupt_datums_are_left_to_the_per_record_path(bad: bytes) -> None:
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": "long"}}, {"name": "s", "type": "string"}]}
    good = [encode(schema, {"a": [1, 2], "s": "ok"}), encode(schema, {"a": [], "s": ""})]
    payloads = [good[0], bad, good[1], good[0] + b"\x00"]  # the last: a byte after the value
    decoder = avro_decoder(RegisteredSchema(text(schema), id=1), Schemas({1: schema}))
    column = pa.array([frame(1, p) for p in payloads], pa.binary())
    found = decode_group(decoder, 1, column)
    assert found is not None
    assert found[0].tolist() == [True, False, True, False]
    assert check_block(decoder, 1, payloads) == 2


def test_array_counts_past_the_bytes_are_refused_before_any_reader() -> None:
    import numpy as np

    schema = {"type": "array", "items": "long"}
    datum = bytes.fromhex("80808080808001") + b"\x02"  # count 2^40 (zigzag), one item
    data = np.frombuffer(datum, np.uint8)
    parsed = fastavro.parse_schema(schema)
    assert not exact_datums(data, np.array([0]), np.array([len(datum)]), parsed, {}).any()


def test_framed_groups_split_by_schema_id_in_order_of_first_row() -> None:
    column = pa.array([frame(7, b"a"), None, b"\x01\x00\x00\x00\x07x", frame(3, b"b"), b"\x00\x00", frame(7, b""),
                       b"\x00\xff\xff\xff\xffz"], pa.binary())
    groups = {group.schema_id: rows for group, rows in framed_groups(column, protobuf=False).items()}
    assert list(groups) == [7, 3]
    assert groups[7].tolist() == [0, 5]
    assert groups[3].tolist() == [3]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(ORDER_PAYLOADS).flatmap(
    lambda p: st.tuples(st.integers(0, len(p)), st.binary(max_size=3)).map(lambda c: p[:c[0]] + c[1]))),
    min_size=1, max_size=20))
def test_fuzz_any_bytes_decode_by_block_as_per_record_or_are_left_to_it(payloads: list[bytes]) -> None:
    decoder = avro_decoder(RegisteredSchema(json.dumps(ORDER), id=1), Schemas({1: ORDER}))
    check_block(decoder, 1, payloads)


def _reference_varint(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    """(zigzag-decoded long, size) of the varint at `start`, read a byte at a time; None when it is not whole."""
    raw = 0
    for j in range(10):
        if start + j >= end or (j == 9 and data[start + j] > 1):
            return None
        raw |= (data[start + j] & 0x7F) << (7 * j)
        if data[start + j] < 0x80:
            return (raw >> 1) ^ -(raw & 1), j + 1
    return None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(
    st.integers(-(1 << 63), (1 << 63) - 1).map(lambda v: encode({"type": "long"}, v)),
    st.binary(max_size=12)).flatmap(lambda b: st.tuples(st.integers(0, len(b)), st.binary(max_size=2)).map(
        lambda c: b[:c[0]] + c[1] if c[0] < len(b) else b + c[1])), min_size=1, max_size=40),
    st.booleans())
def test_varints_of_every_size_read_as_words_equal_a_byte_at_a_time(items: list[bytes], value: bool) -> None:
    import numpy as np

    from kafka_spark.formats.avro.skip import _Walk

    blob = b"".join(items)
    ends = np.cumsum([len(i) for i in items], dtype=np.int64)
    starts = ends - np.array([len(i) for i in items], dtype=np.int64)
    walk = _Walk(np.frombuffer(blob, np.uint8), starts, ends, {})
    decoded, whole = walk.varints(np.arange(len(items), dtype=np.int64), value)
    for i, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        want = _reference_varint(blob, start, end)
        assert bool(whole[i]) == (want is not None), items[i].hex()
        assert bool(walk.ok[i]) == (want is not None)
        if want is not None:
            assert walk.pos[i] == start + want[1]
            if value:
                assert decoded[i] == want[0], items[i].hex()


RUN = {"type": "record", "name": "Run", "fields": [
    {"name": "a", "type": "long"}, {"name": "b", "type": "long"}, {"name": "x", "type": "double"},
    {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}}, {"name": "c", "type": "long"},
    {"name": "flag", "type": "boolean"}, {"name": "s", "type": "string"}, {"name": "d", "type": "long"}]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.fixed_dictionaries({k: st.integers(-(1 << 63), (1 << 63) - 1) for k in "abcd"}).map(
        lambda v: encode(RUN, {**v, "x": 0.5, "f": b"xyz", "flag": True, "s": "ok"})),
    st.binary(max_size=40)).flatmap(lambda b: st.tuples(st.integers(0, len(b)), st.binary(max_size=3)).map(
        lambda c: b[:c[0]] + c[1] if c[0] < len(b) else b + c[1])), min_size=1, max_size=20))
def test_runs_of_longs_and_fixed_widths_decode_by_block_as_per_record_or_are_left(payloads: list[bytes]) -> None:
    """Longs of every size (ten bytes for the extremes), fixed widths between them, cut or extended anywhere."""
    decoder = avro_decoder(RegisteredSchema(json.dumps(RUN), id=1), Schemas({1: RUN}))
    check_block(decoder, 1, payloads)


def test_a_run_takes_the_longest_longs_and_refuses_an_eleventh_byte() -> None:
    values = [{"a": -(1 << 63), "b": (1 << 63) - 1, "c": 1 << 56, "d": -(1 << 55)},
              {"a": 0, "b": -1, "c": 300, "d": 1 << 40}]
    good = [encode(RUN, {**v, "x": 1.5, "f": b"abc", "flag": False, "s": "hé"}) for v in values]
    overlong = b"\x80" * 10 + b"\x00" + good[1][1:]  # `a` as an 11-byte varint of 0
    decoder = avro_decoder(RegisteredSchema(json.dumps(RUN), id=1), Schemas({1: RUN}))
    found = decode_group(decoder, 1, pa.array([frame(1, p) for p in [*good, overlong]], pa.binary()))
    assert found is not None
    assert found[0].tolist() == [True, True, False]
    assert check_block(decoder, 1, good) == 2
