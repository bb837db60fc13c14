"""Bad Avro input: corrupt, truncated and hostile payloads, unknown or unreadable writer schemas, values that do
not fit a writer schema. Each is a PayloadError with its reason, in bounded time and memory, and never a crash
(fastavro's compiled reader recurses on the C stack; deep payloads must not reach it)."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import resource
import time
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_spark.errors import PayloadError, SchemaRegistryError
from kafka_spark.formats.avro.codec import avro_decoder, avro_encoder
from kafka_spark.formats.model import RegisteredSchema, SchemaReference

UTC = datetime.timezone.utc


class Source:
    """Schemas by id; an id not given is unknown (40403), or fails as `failure` when set. Counts lookups."""

    def __init__(self, schemas: dict[int, Any], failure: SchemaRegistryError | None = None) -> None:
        self.schemas = {i: s if isinstance(s, RegisteredSchema) else RegisteredSchema(json.dumps(s), id=i)
                        for i, s in schemas.items()}
        self.failure = failure
        self.lookups = 0

    def by_id(self, schema_id: int) -> RegisteredSchema:
        self.lookups += 1
        if schema_id in self.schemas:
            return self.schemas[schema_id]
        if self.failure is not None:
            raise self.failure
        raise SchemaRegistryError(f"schema {schema_id} not found", status=404, error_code=40403)

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        raise AssertionError("no references here")


def decoder_for(schema: Any, options: dict[str, str] | None = None, writers: dict[int, Any] | None = None) -> Any:
    reader = RegisteredSchema(json.dumps(schema), id=1, subject="s-value", version=3)
    return avro_decoder(reader, Source({1: reader, **(writers or {})}), options)


def write(schema: Any, value: Any) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), value)
    return buffer.getvalue()


def zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


ORDER = {"type": "record", "name": "Order", "namespace": "e", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "status", "type": {"type": "enum", "name": "S", "symbols": ["A", "B"]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "long"}},
    {"name": "opt", "type": ["null", "string", "int"]},
    {"name": "hash", "type": {"type": "fixed", "name": "H", "size": 2}},
]}
GOOD = {"id": 7, "name": "n", "amount": decimal.Decimal("12.34"), "ts": datetime.datetime(2024, 1, 1, tzinfo=UTC),
        "status": "B", "tags": ["t"], "attrs": {"k": 1}, "opt": "o", "hash": b"hh"}


def test_every_truncation_of_a_payload_is_a_payload_error() -> None:
    decoder = decoder_for(ORDER)
    payload = write(ORDER, GOOD)
    assert decoder.decode(1, (), payload)["name"] == "n"
    for end in range(len(payload)):
        with pytest.raises(PayloadError, match="corrupt or truncated Avro payload of writer schema id 1"):
            decoder.decode(1, (), payload[:end])


def test_bytes_after_the_record_are_ignored_as_confluent_and_spark_do() -> None:
    decoder = decoder_for(ORDER)
    payload = write(ORDER, GOOD)
    assert decoder.decode(1, (), payload + b"\x00trailing") == decoder.decode(1, (), payload)


def _fast(fn: Any) -> tuple[Any, float, int]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        result: Any = fn()
    except PayloadError as exc:
        result = exc
    return result, time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before


@pytest.mark.parametrize(("schema", "payload"), [
    ("string", zigzag(1 << 60) + b"abc"),
    ("bytes", zigzag(-5) + b"abc"),
    ("bytes", zigzag((1 << 62) + 1) + b"abc"),
    ({"type": "array", "items": "string"}, zigzag(1 << 60) + zigzag(1) + b"a"),
    ({"type": "array", "items": "long"}, zigzag(-(1 << 60)) + zigzag(5) + zigzag(1)),
    ({"type": "map", "values": "long"}, zigzag(1 << 60) + zigzag(1) + b"a" + zigzag(1)),
    ({"type": "array", "items": "null"}, zigzag(1 << 60) + zigzag(0)),
    ({"type": "array", "items": {"type": "record", "name": "E", "fields": []}}, zigzag(1 << 40)),
    ({"type": "array", "items": {"type": "fixed", "name": "Z", "size": 0}}, zigzag(-(1 << 40)) + zigzag(0)),
    ({"type": "array", "items": {"type": "array", "items": "null"}}, zigzag(1) + zigzag(1 << 50)),
    ("long", b"\xff" * 20),
])
def test_hostile_lengths_and_counts_fail_fast_in_bounded_memory(schema: Any, payload: bytes) -> None:
    decoder = decoder_for(schema)
    result, seconds, grown_kib = _fast(lambda: decoder.decode(1, (), payload))
    assert isinstance(result, PayloadError), result
    assert seconds < 5 and grown_kib < 200_000


def test_arrays_of_zero_width_items_still_decode() -> None:
    schema = {"type": "array", "items": "null"}
    assert decoder_for(schema).decode(1, (), write(schema, [None, None, None])) == [None, None, None]
    empty = {"type": "array", "items": {"type": "record", "name": "E", "fields": []}}
    assert decoder_for(empty).decode(1, (), write(empty, [{}, {}])) == [{}, {}]


def test_a_count_of_zero_byte_items_is_bounded_and_named() -> None:
    # the 6-byte record: a field of array<null> whose one block claims a million items, then the end marker
    nulls = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"},
                                                       {"name": "xs", "type": {"type": "array", "items": "null"}}]}
    payload = zigzag(7) + zigzag(1 << 20) + zigzag(0)
    assert len(payload) == 6
    result, seconds, _ = _fast(lambda: decoder_for(nulls).decode(1, (), payload))
    assert isinstance(result, PayloadError) and seconds < 5
    assert "more than 65536 array items of zero bytes" in str(result)
    at_bound = decoder_for(nulls).decode(1, (), zigzag(7) + zigzag(1 << 16) + zigzag(0))
    assert at_bound == {"id": 7, "xs": [None] * (1 << 16)}
    # the bound is per payload, over every block and array of it
    split = zigzag(7) + (zigzag(1 << 15) * 2 + zigzag(1)) + zigzag(0)
    with pytest.raises(PayloadError, match="more than 65536"):
        decoder_for(nulls).decode(1, (), split)


def test_large_arrays_of_items_that_take_bytes_still_decode() -> None:
    # the same record read on the bounded path (it has an array<null>), with a long array beside it
    both = {"type": "record", "name": "R", "fields": [{"name": "xs", "type": {"type": "array", "items": "null"}},
                                                      {"name": "ns", "type": {"type": "array", "items": "long"}}]}
    value = {"xs": [None] * 10, "ns": list(range(300_000))}
    assert decoder_for(both).decode(1, (), write(both, value)) == value
    longs = {"type": "array", "items": "long"}
    assert decoder_for(longs).decode(1, (), write(longs, list(range(300_000)))) == list(range(300_000))


NODE = {"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}
TREE = {"type": "record", "name": "Tree", "fields": [
    {"name": "label", "type": "string"}, {"name": "kids", "type": {"type": "array", "items": "Tree"}}]}


@pytest.mark.parametrize(("writer", "payload"), [
    (NODE, (zigzag(1) + zigzag(1)) * 200_000 + zigzag(1) + zigzag(0)),  # a linked list 200,000 deep
    (TREE, (zigzag(0) + zigzag(1)) * 200_000),  # a tree 200,000 deep, then cut off
    ({"type": "record", "name": "Loop", "fields": [{"name": "me", "type": "Loop"}]}, b"\x00"),
])
def test_deep_or_endless_nesting_is_a_payload_error_not_a_crash(writer: Any, payload: bytes) -> None:
    # the reader has no recursion (Spark refuses it by default): the writer's nesting is skipped over
    reader = {"type": "record", "name": writer["name"], "fields": [] if writer is not TREE else [
        {"name": "label", "type": "string"}]}
    decoder = decoder_for(reader, writers={2: writer})
    result, seconds, _ = _fast(lambda: decoder.decode(2, (), payload))
    assert isinstance(result, PayloadError) and seconds < 30
    with pytest.raises(PayloadError):
        decoder_for(writer, {"recursiveFieldMaxDepth": "3"}).decode(1, (), payload)


def test_recursive_payloads_decode_short_or_long() -> None:
    decoder = decoder_for(TREE, {"recursiveFieldMaxDepth": "2"})
    small = {"label": "root", "kids": [{"label": "a", "kids": [{"label": "deep", "kids": []}]}]}
    wide = {"label": "root" * 300, "kids": [{"label": f"k{i}", "kids": []} for i in range(100)]}
    for value in (small, wide):  # the wide one is long enough for the pure-Python reader
        out = pa.array([decoder.decode(1, (), write(TREE, value))], type=decoder.arrow_type).to_pylist()
        assert out == [{"label": value["label"], "kids": [{"label": k["label"]} for k in value["kids"]]}]


@pytest.mark.parametrize(("value_field", "payload", "reason"), [
    ({"type": "string"}, zigzag(2) + b"\xff\xfe", "UnicodeDecodeError"),
    ({"type": "enum", "name": "S", "symbols": ["A"]}, zigzag(5), "IndexError"),
    (["null", "int"], zigzag(7), "IndexError"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}, zigzag(2) + (20000).to_bytes(2, "big"),
     "does not fit decimal\\(4, 2\\)"),
    ({"type": "long", "logicalType": "timestamp-millis"}, zigzag(1 << 61), "overflows"),
])
def test_values_that_cannot_be_are_payload_errors(value_field: Any, payload: bytes, reason: str) -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "f", "type": value_field}]}
    with pytest.raises(PayloadError, match=reason) as failure:
        decoder_for(schema).decode(1, (), payload)
    assert "writer schema id 1" in str(failure.value)


def test_an_unknown_writer_id_is_a_payload_error_looked_up_once() -> None:
    reader = RegisteredSchema(json.dumps(ORDER), id=1)
    source = Source({1: reader})
    decoder = avro_decoder(reader, source)
    for _ in range(3):
        with pytest.raises(PayloadError, match="schema id 42 is not in the schema registry"):
            decoder.decode(42, (), b"\x00")
    assert source.lookups == 1


def test_other_registry_failures_are_not_payload_errors_and_are_retried() -> None:
    reader = RegisteredSchema(json.dumps(ORDER), id=1)
    source = Source({1: reader}, failure=SchemaRegistryError("unavailable", status=503))
    decoder = avro_decoder(reader, source)
    for _ in range(2):
        with pytest.raises(SchemaRegistryError, match="unavailable"):
            decoder.decode(5, (), b"\x00")
    assert source.lookups == 2


@pytest.mark.parametrize(("writer", "reason"), [
    (RegisteredSchema('syntax = "proto3";', "PROTOBUF", id=2), "is a PROTOBUF schema, not Avro"),
    (RegisteredSchema("{not json", id=2), "does not parse"),
    (RegisteredSchema('{"type": "record", "name": "R", "fields": [{"name": "x", "type": "Nope"}]}', id=2),
     "does not parse"),
])
def test_writer_schemas_that_cannot_be_read(writer: RegisteredSchema, reason: str) -> None:
    with pytest.raises(PayloadError, match=reason):
        decoder_for(ORDER, writers={2: writer}).decode(2, (), b"\x00")


def test_encoding_a_value_that_does_not_fit_names_the_field() -> None:
    writer = RegisteredSchema(json.dumps(ORDER), id=1, subject="s-value", version=3)
    encoder = avro_encoder(writer, Source({1: writer}))
    assert encoder.encode(dict(GOOD, attrs=[("k", 1)]))[1] == write(ORDER, GOOD)
    for bad, field in [({"id": "seven"}, "id"), ({"status": "C"}, "status"), ({"hash": b"toolong"}, "hash"),
                       ({"amount": decimal.Decimal("1.234")}, "amount"), ({"tags": [1]}, "tags")]:
        with pytest.raises(PayloadError, match="subject 's-value' version 3 id 1") as failure:
            encoder.encode(dict(GOOD, **bad))
        assert field in str(failure.value)


# ---- fuzz -------------------------------------------------------------------------------------------

FUZZ = {"type": "record", "name": "F", "namespace": "fz", "fields": [
    *ORDER["fields"],
    {"name": "nested", "type": {"type": "array", "items": {"type": "map", "values": [
        "null", {"type": "record", "name": "Cell", "fields": [
            {"name": "d", "type": {"type": "int", "logicalType": "date"}},
            {"name": "big", "type": {"type": "fixed", "name": "B", "size": 9, "logicalType": "decimal",
                                     "precision": 20, "scale": 3}}]}]}}},
    {"name": "both", "type": ["int", "long", "float", "double", "string", "bytes", "Cell"]},
    {"name": "list", "type": ["null", {"type": "record", "name": "L", "fields": [
        {"name": "next", "type": ["null", "L"]}]}]},
]}
_SEED = write(FUZZ, {**GOOD, "nested": [{"a": None, "b": {"d": 3, "big": decimal.Decimal("1.5")}}],
                     "both": 2.5, "list": {"next": {"next": None}}})
_FUZZ_DECODER: list[Any] = []


def _fuzz_decode(payload: bytes) -> None:
    if not _FUZZ_DECODER:
        _FUZZ_DECODER.append(decoder_for(FUZZ, {"recursiveFieldMaxDepth": "4"}))
    decoder = _FUZZ_DECODER[0]
    try:
        value = decoder.decode(1, (), payload)
    except PayloadError:
        return
    pa.array([value], type=decoder.arrow_type)  # whatever decodes builds the column


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(payload=st.binary(max_size=200))
def test_fuzz_random_bytes_give_a_value_or_a_payload_error(payload: bytes) -> None:
    _fuzz_decode(payload)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.lists(st.tuples(st.integers(0, len(_SEED) - 1), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(0, len(_SEED)))
def test_fuzz_mutated_payloads_give_a_value_or_a_payload_error(edits: list[tuple[int, int]], cut: int) -> None:
    payload = bytearray(_SEED)
    for at, byte in edits:
        payload[at] = byte
    _fuzz_decode(bytes(payload[:cut] if cut < len(_SEED) // 2 else payload))


def test_encoding_recursive_records_converts_every_level() -> None:
    node = {"type": "record", "name": "Node", "fields": [
        {"name": "attrs", "type": {"type": "map", "values": "int"}}, {"name": "next", "type": ["null", "Node"]}]}
    writer = RegisteredSchema(json.dumps(node), id=1)
    encoder = avro_encoder(writer, Source({1: writer}))
    value = {"attrs": [("a", 1)], "next": {"attrs": [("b", 2)], "next": {"attrs": [], "next": None}}}
    expected = {"attrs": {"a": 1}, "next": {"attrs": {"b": 2}, "next": {"attrs": {}, "next": None}}}
    assert encoder.encode(value)[1] == write(node, expected)
    with pytest.raises(PayloadError, match="attrs"):
        encoder.encode({"attrs": [("a", "x")], "next": None})


@pytest.mark.parametrize(("field", "prefix"), [
    ("int", b""), ({"type": "int", "logicalType": "date"}, b""), (["null", "int", "string"], zigzag(1)),
    ({"type": "array", "items": "int"}, zigzag(1)), ({"type": "map", "values": "int"}, zigzag(1) + zigzag(1) + b"k"),
])
def test_an_int_beyond_32_bits_is_a_payload_error_not_a_broken_column(field: Any, prefix: bytes) -> None:
    # fastavro reads an int's varint as a long; Arrow would refuse the value for the whole column
    schema = {"type": "record", "name": "R", "fields": [{"name": "f", "type": field}]}
    with pytest.raises(PayloadError, match="does not fit 32 bits"):
        decoder_for(schema).decode(1, (), prefix + zigzag(1 << 32) + zigzag(0))


def test_a_writer_record_of_another_name_is_named_in_a_short_error() -> None:
    fields = [{"name": f"f{i}", "type": "long"} for i in range(40)]
    reader = {"type": "record", "name": "Order", "namespace": "shop", "fields": fields}
    writer = {"type": "record", "name": "topLevelRecord", "fields": fields}
    payload = io.BytesIO()
    fastavro.schemaless_writer(payload, fastavro.parse_schema(writer), {f"f{i}": i for i in range(40)})
    with pytest.raises(PayloadError) as caught:
        decoder_for(reader, writers={2: writer}).decode(2, (), payload.getvalue())
    text = str(caught.value)
    assert "writer schema id 2 cannot be read with the query's schema" in text
    assert "'topLevelRecord' does not resolve to the reader's 'shop.Order'" in text
    assert "names match" in text and len(text) < 400, text
