"""Avro encoded column-wise (`kafka_spark.formats.avro.column_encode`) against the per-record path (`AvroEncoder`,
fastavro's `schemaless_writer` of each `to_pylist` value): random writer schemas with the Arrow values spark-avro
reads for them, and random Arrow column types with the schemas derived from them, edge values throughout. Every
row the column-wise path takes is byte for byte the per-record path's; what `to_avro` and the Kafka sink
(`encode_side`) give, values or errors, is the same with the column-wise path on and off
(KAFKA_SPARK_AVRO_BLOCK_WRITE=0)."""

from __future__ import annotations

import contextlib
import datetime
import decimal
import json
import math
import os
import random
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from harness.schema_registry import RegistryServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unit.formats.avro_random import _TEXT, SchemaMaker, datum, encode, names

from kafka_spark.errors import PayloadError
from kafka_spark.formats.avro.codec import AvroEncoder, avro_decoder
from kafka_spark.formats.avro.column_encode import SWITCH, _varints, _zigzag, encode_column
from kafka_spark.formats.avro.writer_schema import avro_schema_for
from kafka_spark.formats.encoding import InlineSource, encode_side, with_derived, writer_choice
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.options import SideFormat
from kafka_spark.formats.registry.settings import RegistrySettings
from kafka_spark.protocol.varint import encode_varint
from kafka_spark.spark.function_tasks import ColumnEncoding

_PROPERTY = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_ZONES = (None, "UTC", "America/New_York", "Asia/Kolkata")


@contextlib.contextmanager
def switched(value: str) -> Iterator[None]:
    before = os.environ.get(SWITCH)
    os.environ[SWITCH] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SWITCH, None)
        else:
            os.environ[SWITCH] = before


def encoder_of(schema: Any) -> AvroEncoder:
    """The per-record encoder of `schema` (JSON text, or the object it stands for)."""
    registered = RegisteredSchema(schema if isinstance(schema, str) and schema[:1] in "{[\"" else json.dumps(schema))
    return AvroEncoder(registered, InlineSource(registered))


def per_record(encoder: AvroEncoder, column: pa.Array, i: int) -> Any:
    """Row i as the per-record path gives it: None, the payload, or the error's type and text."""
    try:
        value = column[i].as_py()
        return None if value is None else encoder.encode(value)[1]
    except Exception as exc:  # to_pylist's own (a time it cannot hold) or the encoder's
        return type(exc).__name__, str(exc)


def check(encoder: AvroEncoder, column: pa.Array, prefix: bytes = b"") -> tuple[int, int]:
    """Every row the column-wise path takes equals the per-record path's payload; (rows taken, rows left)."""
    done = encode_column(column, *encoder.parsed_writer(), prefix)
    present = len(column) - column.null_count
    if done is None:
        return 0, present
    datums, left = done
    assert len(datums) == len(column) and datums.type == pa.binary()
    datums.validate(full=True)
    out = datums.to_pylist()
    left_rows = set(left.tolist())
    for i in range(len(column)):
        if not column[i].is_valid:
            assert out[i] is None and i not in left_rows
        elif i in left_rows:
            assert out[i] is None
        else:
            want = per_record(encoder, column, i)
            assert isinstance(want, bytes), (i, want)
            assert out[i] == prefix + want, (i, out[i], want)
    return present - len(left_rows), len(left_rows)


def outcome(run: Any, *args: Any) -> Any:
    try:
        return run(*args).to_pylist()
    except Exception as exc:  # the same error either way: its type and text
        return type(exc).__name__, str(exc)


def to_avro_both_ways(encoding: ColumnEncoding, column: pa.Array) -> Any:
    """ColumnEncoding.values of `column` with the column-wise path on and off: the same values or error."""
    with switched("1"):
        on = outcome(encoding.values, column)
    with switched("0"):
        off = outcome(encoding.values, column)
    assert on == off
    return on


# ---- random writer schemas, with the values spark-avro reads for them --------------------------------

def holes(rng: random.Random, value: Any, rate: float) -> Any:
    """`value` with some nested values None: a null where the schema may have none."""
    if isinstance(value, dict):
        return {k: None if rng.random() < rate else holes(rng, v, rate) for k, v in value.items()}
    if isinstance(value, list):
        return [None if rng.random() < rate else holes(rng, v, rate) for v in value]
    return value


def variant(rng: random.Random, t: pa.DataType) -> pa.DataType:
    """`t` with some parts in another Arrow type of the same values (large, dictionary, wider)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, variant(rng, f.type)) for f in t])
    if pa.types.is_list(t):
        item = variant(rng, t.value_type)
        return pa.large_list(item) if rng.random() < 0.3 else pa.list_(item)
    if pa.types.is_map(t):
        return pa.map_(t.key_type, variant(rng, t.item_type))
    r = rng.random()
    if pa.types.is_string(t) and r < 0.4:
        return pa.large_string() if r < 0.2 else pa.dictionary(pa.int32(), pa.string())
    if pa.types.is_binary(t) and r < 0.2:
        return pa.large_binary()
    if pa.types.is_int32(t) and r < 0.3:
        return pa.int64()
    if pa.types.is_floating(t) and r < 0.2:
        return pa.float64() if pa.types.is_float32(t) else pa.float32()
    if pa.types.is_decimal(t) and r < 0.2:
        return pa.decimal128(38, t.scale)
    if pa.types.is_timestamp(t) and t.tz == "UTC" and r < 0.3:
        return pa.timestamp("us", tz=rng.choice(_ZONES[1:]))  # the same instants in another zone
    return t


def writer_case(rng: random.Random) -> tuple[Any, pa.Array]:
    schema = SchemaMaker(rng, multi_unions=0.03).top(depth=rng.randint(1, 4))
    decoder = avro_decoder(RegisteredSchema(json.dumps(schema)), InlineSource(RegisteredSchema(json.dumps(schema))))
    values: list[Any] = []
    rate = rng.choice((0.0, 0.0, 0.02, 0.1))
    for _ in range(rng.randint(1, 14)):
        if rng.random() < 0.08:
            values.append(None)
            continue
        try:
            value = decoder.decode(0, (), encode(schema, datum(rng, schema, names(schema))))
        except PayloadError:  # a value spark-avro refuses (a time past 64 bits): not a column's
            continue
        values.append(holes(rng, value, rate))
    arrow = variant(rng, decoder.arrow_type) if rng.random() < 0.5 else decoder.arrow_type
    column = pa.array(values, arrow)
    lead = rng.choice((0, 0, 2))  # a sliced column: buffers read from an offset
    if lead:
        column = pa.concat_arrays([column.slice(0, lead), column]).slice(min(lead, len(column)))
    return schema, column


@_PROPERTY
@given(rng=st.randoms(use_true_random=False))
def test_random_writer_schemas_encode_as_per_record(rng: random.Random) -> None:
    schema, column = writer_case(rng)
    encoder = encoder_of(schema)
    try:
        check(encoder, column)
        check(encoder, column, b"\x00\x00\x00\x00\x07")
        registered = RegisteredSchema(json.dumps(schema))
        to_avro_both_ways(ColumnEncoding("to_avro", "avro", inline=registered, source=InlineSource(registered)),
                          column)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nschema {json.dumps(schema)}\ntype {column.type}") from None


def test_the_random_writer_schemas_mostly_go_column_wise() -> None:
    """The property above proves little if everything went per record."""
    taken = left = 0
    for seed in range(150):
        schema, column = writer_case(random.Random(seed))
        got = check(encoder_of(schema), column)
        taken, left = taken + got[0], left + got[1]
    assert taken > 2 * left, (taken, left)


# ---- random column types, with the schemas derived from them -----------------------------------------

def arrow_type(rng: random.Random, depth: int) -> pa.DataType:
    r = rng.random()
    if depth > 0 and r < 0.3:
        fields = [arrow_type(rng, depth - 1) for _ in range(rng.randint(1, 4))]
        return pa.struct([pa.field(f"f{i}", f, nullable=pa.types.is_null(f) or rng.random() < 0.8)
                          for i, f in enumerate(fields)])
    if depth > 0 and r < 0.42:
        item = arrow_type(rng, depth - 1)
        return rng.choice((pa.list_, pa.large_list))(pa.field("item", item, nullable=pa.types.is_null(item)
                                                              or rng.random() < 0.8))
    if depth > 0 and r < 0.5:
        return pa.map_(pa.string(), arrow_type(rng, depth - 1))
    return rng.choice((
        pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.string(),
        pa.large_string(), pa.binary(), pa.large_binary(), pa.binary(3), pa.date32(), pa.time64("us"),
        pa.time64("ns"), pa.duration("us"), pa.null(), pa.timestamp("us", tz=rng.choice(_ZONES)),
        pa.decimal128(rng.randint(1, 38), 0), pa.decimal128(38, 38), pa.decimal128(12, 2), pa.decimal128(18, 6)))


def arrow_value(rng: random.Random, t: pa.DataType, nulls: float) -> Any:
    if rng.random() < nulls or pa.types.is_null(t):
        return None
    edge = rng.random() < 0.3
    if pa.types.is_struct(t):
        return {f.name: arrow_value(rng, f.type, nulls) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [arrow_value(rng, t.value_type, nulls) for _ in range(rng.choice((0, 1, 3)))]
    if pa.types.is_map(t):
        return [(rng.choice(("", "a", "é", "k" * 20)), arrow_value(rng, t.item_type, nulls))
                for _ in range(rng.choice((0, 1, 2)))]  # keys may repeat: such a row goes per record
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_integer(t):
        low, high = -(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1
        return rng.choice((low, high, 0, -1, 63, 64, -65)) if edge else rng.randint(low, high)
    if pa.types.is_floating(t):
        if edge:
            return rng.choice((0.0, -0.0, math.nan, math.inf, -math.inf, 1e300, 5e-324))
        fmt = "<f" if t.bit_width == 32 else "<d"
        return struct.unpack(fmt, rng.randbytes(struct.calcsize(fmt)))[0]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 3)))
    if pa.types.is_fixed_size_binary(t):
        return rng.randbytes(t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return rng.randbytes(rng.choice((0, 1, 5)))
    if pa.types.is_date32(t):
        return rng.choice((-719_162, 2_932_896, 0, -1)) if edge else rng.randint(-800_000, 3_000_000)
    if pa.types.is_timestamp(t):
        year = 365 * 86_400_000_000
        return rng.choice((-1, 0, 999, -1001, -1969 * year, 8000 * year)) if edge else rng.randint(-1969 * year,
                                                                                                   8000 * year)
    if pa.types.is_time64(t):
        day = 86_400 * (10**9 if t.unit == "ns" else 10**6)
        value = rng.choice((0, day - 1, 1000)) if edge else rng.randrange(day)
        return value - value % 1000 if t.unit == "ns" and rng.random() < 0.9 else value
    if pa.types.is_duration(t):
        return rng.choice((-(1 << 63), (1 << 63) - 1, 0, -1)) if edge else rng.randint(-(1 << 50), 1 << 50)
    if pa.types.is_decimal(t):
        limit = 10**t.precision
        unscaled = rng.choice((0, 1, -1, limit - 1, 1 - limit, 128, -128, 255, -256)) if edge \
            else rng.randrange(1 - limit, limit)
        unscaled = max(1 - limit, min(limit - 1, unscaled))
        return decimal.Decimal(unscaled).scaleb(-t.scale, decimal.Context(prec=80))
    raise AssertionError(t)


def column_case(rng: random.Random) -> pa.Array:
    t = arrow_type(rng, rng.randint(0, 3))
    if rng.random() < 0.7:
        t = pa.struct([pa.field("top", t)]) if not pa.types.is_struct(t) else t
    nulls = rng.choice((0.0, 0.05, 0.2))
    return pa.array([arrow_value(rng, t, nulls) for _ in range(rng.randint(1, 12))], t)


@_PROPERTY
@given(rng=st.randoms(use_true_random=False))
def test_random_column_types_encode_as_per_record_with_the_derived_schema(rng: random.Random) -> None:
    column = column_case(rng)
    encoder = encoder_of(avro_schema_for(column.type))
    try:
        to_avro_both_ways(ColumnEncoding("to_avro", "avro"), column)
        check(encoder, column)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\ntype {column.type}\nschema {encoder.schema.schema}") from None


def test_the_random_column_types_mostly_go_column_wise() -> None:
    taken = left = 0
    for seed in range(150):
        column = column_case(random.Random(seed))
        got = check(encoder_of(avro_schema_for(column.type)), column)
        taken, left = taken + got[0], left + got[1]
    assert taken > 3 * left, (taken, left)


# ---- edges ---------------------------------------------------------------------------------------------

def test_zigzag_varints_equal_the_protocols_for_every_width() -> None:
    values = [0, 1, -1, 63, -64, 64, -65, (1 << 31) - 1, -(1 << 31), (1 << 63) - 1, -(1 << 63)]
    values += [s * (1 << k) + d for k in range(0, 63, 7) for s in (1, -1) for d in (-1, 0, 1)]
    piece = _varints(_zigzag(np.array(values, np.int64)))
    out = np.zeros(int(piece.size.sum()), np.uint8)
    piece.write(out, np.cumsum(piece.size) - piece.size)
    assert out.tobytes() == b"".join(encode_varint(v) for v in values)


EDGES = {"type": "record", "name": "Edges", "namespace": "t", "fields": [
    {"name": "long", "type": "long"}, {"name": "int", "type": "int"}, {"name": "text", "type": "string"},
    {"name": "items", "type": {"type": "array", "items": "long"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "string"]}},
    {"name": "first", "type": ["null", "string"]}, {"name": "last", "type": ["double", "null"]},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 4}},
    {"name": "exact", "type": {"type": "fixed", "name": "F", "size": 16, "logicalType": "decimal", "precision": 38,
                               "scale": 4}},
    {"name": "wide", "type": {"type": "fixed", "name": "W", "size": 20, "logicalType": "decimal", "precision": 38,
                              "scale": 4}},
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "clock", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "status", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "PAID"]}},
]}
EDGES_TYPE = pa.struct([
    ("long", pa.int64()), ("int", pa.int32()), ("text", pa.string()), ("items", pa.list_(pa.int64())),
    ("attrs", pa.map_(pa.string(), pa.string())), ("first", pa.string()), ("last", pa.float64()),
    ("amount", pa.decimal128(38, 4)), ("exact", pa.decimal128(38, 4)), ("wide", pa.decimal128(38, 4)),
    ("ms", pa.timestamp("us", tz="UTC")), ("us", pa.timestamp("us", tz="Asia/Kolkata")),
    ("local", pa.timestamp("us")), ("day", pa.date32()), ("clock", pa.time64("us")), ("id", pa.string()),
    ("status", pa.string())])
BIGGEST = decimal.Decimal("9" * 34 + ".9999")


def edge(i: int) -> dict[str, Any]:
    amounts = (decimal.Decimal(0), BIGGEST.copy_negate(), BIGGEST, decimal.Decimal("-0.0128"),
               decimal.Decimal("0.0128"), decimal.Decimal("-0.0129"), decimal.Decimal("-1"))
    return {"long": (-(1 << 63), (1 << 63) - 1, 0, -1)[i % 4], "int": (-(1 << 31), (1 << 31) - 1, 0)[i % 3],
            "text": ("", "日本語😀", "\x00", "é" * 70)[i % 4], "items": [[], [-(1 << 63)], [1, 2, 3]][i % 3],
            "attrs": [[], [("", None)], [("k", "v"), ("é", "")]][i % 3], "first": (None, "", "x")[i % 3],
            "last": (None, -0.0, math.nan, math.inf)[i % 4], "amount": amounts[i % 7], "exact": amounts[(i + 1) % 7],
            "wide": amounts[(i + 2) % 7],
            "ms": datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999 - i, tzinfo=datetime.timezone.utc),
            "us": datetime.datetime(1, 1, 3, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=i),
            "local": datetime.datetime(1900, 1, 1) - datetime.timedelta(microseconds=i),
            "day": datetime.date(1969, 12, 31) - datetime.timedelta(days=i), "clock": datetime.time(23, 59, 59, i),
            "id": str(uuid.UUID(int=i)), "status": ("NEW", "PAID")[i % 2]}


def test_edge_values_encode_as_per_record() -> None:
    column = pa.array([edge(i) for i in range(28)] + [None], EDGES_TYPE)
    assert check(encoder_of(EDGES), column) == (28, 0)
    assert check(encoder_of(EDGES), column.slice(5), b"\x00\x00\x00\x00\x01") == (23, 0)


def test_a_union_at_the_top_and_named_references_encode_as_per_record() -> None:
    item = {"type": "record", "name": "Item", "namespace": "n", "fields": [{"name": "sku", "type": "string"}]}
    schema = ["null", {"type": "record", "name": "Top", "namespace": "n", "fields": [
        {"name": "first", "type": item}, {"name": "more", "type": {"type": "array", "items": ["n.Item", "null"]}}]}]
    arrow = pa.struct([("first", pa.struct([("sku", pa.string())])),
                       ("more", pa.list_(pa.struct([("sku", pa.string())])))])
    column = pa.array([{"first": {"sku": "a"}, "more": [{"sku": ""}, None]}, None, {"first": {"sku": "é"}, "more": []}],
                      arrow)
    assert check(encoder_of(schema), column) == (2, 0)


@pytest.mark.parametrize(("schema", "arrow", "values", "left"), [
    ("int", pa.int64(), [1, 1 << 31, -(1 << 31) - 1, -(1 << 31)], [1, 2]),
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, pa.string(), ["A", "C", "", "B"], [1, 2]),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}, pa.decimal128(6, 2),
     [decimal.Decimal("99.99"), decimal.Decimal("100.00"), decimal.Decimal("-100.00")], [1, 2]),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}, pa.struct([("a", pa.int64())]),
     [{"a": None}, {"a": 1}], [0]),
    ({"type": "map", "values": "long"}, pa.map_(pa.string(), pa.int64()), [[("a", 1), ("a", 2)], [("a", 1)]], [0]),
    ({"type": "fixed", "name": "F", "size": 2}, pa.binary(), [b"ab", b"abc", b""], [1, 2]),
    ({"type": "array", "items": "string"}, pa.list_(pa.string()), [["a", None], ["b"]], [0]),
    ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us", tz="UTC"), [0, 1 << 62], [1]),
    ({"type": "int", "logicalType": "date"}, pa.date32(), [0, 1 << 30], [1]),
    ({"type": "long", "logicalType": "time-micros"}, pa.time64("ns"), [1000, 1001], [1]),
])
def test_rows_that_do_not_fit_are_left_to_the_per_record_path(schema: Any, arrow: pa.DataType, values: list[Any],
                                                               left: list[int]) -> None:
    column = pa.array(values, arrow)
    done = encode_column(column, *encoder_of(schema).parsed_writer())
    assert done is not None and done[1].tolist() == left
    registered = RegisteredSchema(json.dumps(schema))
    to_avro_both_ways(ColumnEncoding("to_avro", "avro", inline=registered, source=InlineSource(registered)), column)


@pytest.mark.parametrize(("schema", "arrow", "values"), [
    (["null", "long", "string"], pa.int64(), [1, None]),
    ({"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]},
     pa.struct([("next", pa.null())]), [{"next": None}]),
    ("long", pa.string(), ["1"]),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long", "default": 1}]},
     pa.struct([("b", pa.int64())]), [{"b": 1}]),
    ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us"), [0]),
])
def test_columns_it_does_not_take_go_per_record_whole(schema: Any, arrow: pa.DataType, values: list[Any]) -> None:
    column = pa.array(values, arrow)
    assert encode_column(column, *encoder_of(schema).parsed_writer()) is None
    registered = RegisteredSchema(json.dumps(schema))
    to_avro_both_ways(ColumnEncoding("to_avro", "avro", inline=registered, source=InlineSource(registered)), column)


# ---- through to_avro and the Kafka sink ----------------------------------------------------------------

@pytest.fixture(scope="module")
def server() -> Iterator[RegistryServer]:
    with RegistryServer() as running:
        yield running


def avro_side(arrow: pa.DataType, **settings_: str) -> Any:
    return with_derived(writer_choice(SideFormat("value", "avro"), settings_), arrow, uuid.uuid4().hex)


def test_the_sink_frames_the_same_bytes_with_the_column_wise_path_on_and_off(server: RegistryServer) -> None:
    settings_ = RegistrySettings((server.url,), max_retries=0)
    column = pa.array([edge(i) for i in range(12)] + [None], EDGES_TYPE)
    topic = f"edges-{uuid.uuid4().hex[:8]}"
    side = avro_side(EDGES_TYPE)
    with switched("1"):
        on = encode_side(side, settings_, column, topic)
        mixed = encode_side(side, settings_, column, [topic, f"{topic}-b", topic] * 4 + [topic])
    with switched("0"):
        off = encode_side(side, settings_, column, topic)
        mixed_off = encode_side(side, settings_, column, [topic, f"{topic}-b", topic] * 4 + [topic])
    assert on.type == off.type == pa.binary()
    assert on.to_pylist() == off.to_pylist() and on[-1].as_py() is None
    assert mixed.to_pylist() == mixed_off.to_pylist() == on.to_pylist()  # one schema: one id under both subjects


def test_a_value_that_does_not_fit_raises_the_same_error_on_and_off(server: RegistryServer) -> None:
    settings_ = RegistrySettings((server.url,), max_retries=0)
    arrow = pa.struct([pa.field("id", pa.int64(), nullable=False), ("tags", pa.map_(pa.string(), pa.int64()))])
    column = pa.array([{"id": 1, "tags": [("a", 1)]}, {"id": None, "tags": []}, {"id": 3, "tags": [("b", 2)]}],
                      arrow)
    topic = f"bad-{uuid.uuid4().hex[:8]}"
    errors = []
    for value in ("1", "0"):
        with switched(value), pytest.raises(PayloadError) as caught:
            encode_side(avro_side(arrow), settings_, column, [topic, topic, f"{topic}-b"])
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert f"topic '{topic}'" in errors[0] and "id" in errors[0]


def test_to_avro_with_a_registered_writer_gives_the_same_framed_values(server: RegistryServer) -> None:
    settings_ = RegistrySettings((server.url,), max_retries=0)
    column = pa.array([edge(i) for i in range(9)] + [None], EDGES_TYPE)
    side = with_derived(writer_choice(SideFormat("value", "avro", subject=f"s-{uuid.uuid4().hex[:8]}"), {}),
                        EDGES_TYPE, uuid.uuid4().hex)
    values = to_avro_both_ways(ColumnEncoding("to_avro", "avro", side=side, registry=settings_), column)
    assert values[0][:1] == b"\x00" and values[-1] is None
    bad = pa.array([{"long": 1, "int": 2}, {"long": None}], pa.struct([("long", pa.int64()), ("int", pa.int64())]))
    plain = ColumnEncoding("to_avro", "avro", inline=RegisteredSchema(json.dumps(
        {"type": "record", "name": "R", "fields": [{"name": "long", "type": "long"}, {"name": "int", "type": "int"}]})))
    plain = ColumnEncoding("to_avro", "avro", inline=plain.inline, source=InlineSource(plain.inline))
    error = to_avro_both_ways(plain, bad)
    assert error[0] == "PayloadError" and error[1].startswith("to_avro: a value does not fit the schema given")


def test_rows_of_many_topics_and_failing_rows_give_the_same_result_on_and_off(server: RegistryServer) -> None:
    settings_ = RegistrySettings((server.url,), max_retries=0)
    arrow = pa.struct([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                       ("tags", pa.list_(pa.string()))])
    side = avro_side(arrow)
    base = f"many-{uuid.uuid4().hex[:8]}"
    for seed in range(12):
        rng = random.Random(seed)
        n = rng.randint(1, 30)
        values = [None if rng.random() < 0.1 else {"id": None if rng.random() < 0.03 else rng.randint(-9, 9),
                                                    "name": rng.choice(("", "é", None)), "tags": ["x"] * (i % 3)}
                  for i in range(n)]
        topics = [f"{base}-{rng.randrange(3)}" for _ in range(n)]
        column = pa.array(values, arrow).slice(0)
        results = []
        for value in ("1", "0"):
            with switched(value):
                results.append(outcome(encode_side, side, settings_, column, topics))
        assert results[0] == results[1], seed


def test_a_writer_that_cannot_be_resolved_fails_where_the_per_record_path_fails(server: RegistryServer) -> None:
    from kafka_spark.formats.registry.client import registry_for

    settings_ = RegistrySettings((server.url,), max_retries=0)
    arrow = pa.struct([pa.field("id", pa.int64(), nullable=False)])
    side = with_derived(writer_choice(SideFormat("value", "avro"), {"auto.register.schemas": "false"}), arrow, "w")
    known, unknown = f"known-{uuid.uuid4().hex[:8]}", f"unknown-{uuid.uuid4().hex[:8]}"
    assert side.derived is not None
    registry_for(settings_).register(f"{known}-value", side.derived)
    for values in ([{"id": 1}, {"id": None}, {"id": 3}], [{"id": 1}, {"id": 2}, {"id": 3}]):
        column = pa.array(values, arrow)
        results = []
        for value in ("1", "0"):
            with switched(value):
                results.append(outcome(encode_side, side, settings_, column, [known, known, unknown]))
        assert results[0] == results[1]
        assert results[0][0] == ("PayloadError" if values[1]["id"] is None else "ConfigError")
