"""The Avro codec against Confluent's own AvroSerializer / AvroDeserializer on an in-memory registry: what they
write we decode to the objects they were given (in spark-avro's types), what we write they read back, and
schema evolution between writer and reader schemas."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry import SchemaReference as ConfluentReference
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import given, settings
from hypothesis import strategies as st
from unit.formats.codec_support import ConfluentSource, new_registry

from kafka_spark.errors import PayloadError
from kafka_spark.formats.avro.codec import avro_decoder, avro_encoder, avro_schema_for
from kafka_spark.formats.registry.wire import frame, split

UTC = datetime.timezone.utc
VALUE = SerializationContext("orders", MessageField.VALUE)


def register(client: Any, subject: str, schema: Any, refs: list[Any] | None = None) -> int:
    return int(client.register_schema(subject, Schema(json.dumps(schema), "AVRO", refs or [])))


def serialize(client: Any, schema: Any, value: Any, refs: list[Any] | None = None) -> bytes:
    serializer = AvroSerializer(client, Schema(json.dumps(schema), "AVRO", refs or []),
                                conf={"auto.register.schemas": True})
    return bytes(serializer(value, VALUE))


def decoded(decoder: Any, framed: list[bytes]) -> list[Any]:
    """What the decoder gives for framed records, through the Arrow column (to_pylist, maps as dicts)."""
    values = []
    for data in framed:
        schema_id, indexes, payload = split(data, False)
        values.append(decoder.decode(schema_id, indexes, bytes(payload)))
    t = decoder.arrow_type
    return [plain(v, t) for v in pa.array(values, type=t).to_pylist()]


def plain(value: Any, t: pa.DataType) -> Any:
    """A to_pylist value with its maps (lists of (key, value) pairs) as dicts."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: plain(value[f.name], f.type) for f in t}
    if pa.types.is_list(t):
        return [plain(v, t.value_type) for v in value]
    if pa.types.is_map(t):
        return {k: plain(v, t.item_type) for k, v in value}
    return value


ADDRESS = {"type": "record", "name": "Address", "namespace": "com.shop", "fields": [
    {"name": "street", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}]}

ORDER = {"type": "record", "name": "Order", "namespace": "com.shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "paid", "type": "boolean"},
    {"name": "weight", "type": "float"},
    {"name": "score", "type": ["null", "double"]},
    {"name": "blob", "type": "bytes"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    {"name": "big", "type": {"type": "fixed", "name": "Big", "size": 16, "logicalType": "decimal",
                             "precision": 38, "scale": 9}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "opened", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "closed", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "updated", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "address", "type": ADDRESS},
    {"name": "billing", "type": ["null", "Address"], "default": None},
    {"name": "note", "type": ["null", "string", "long", "Address"], "default": None},
]}


def order(i: int, **changes: Any) -> dict[str, Any]:
    value = {
        "id": 10 ** 12 + i, "customer": f"c-{i} ü", "paid": i % 2 == 0, "weight": 0.5 * i, "score": None,
        "blob": bytes([i, 0, 255]), "status": "PAID", "hash": b"\x00\x01\x02\x03",
        "amount": decimal.Decimal("-12345.67"), "big": decimal.Decimal("12345678901234567890123456789.123456789"),
        "day": datetime.date(2024, 2, 29), "opened": datetime.time(8, 30, 0, 250000),
        "closed": datetime.time(17, 45, 59, 999999),
        "created": datetime.datetime(2024, 3, 1, 10, 0, 0, 123000, tzinfo=UTC),
        "updated": datetime.datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=UTC),
        "local_ms": datetime.datetime(2024, 3, 1, 10, 0, 0, 123000),
        "local_us": datetime.datetime(2024, 3, 1, 10, 0, 0, 123456),
        "ref": uuid.UUID("9f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b"), "tags": ["x", "y"],
        "attrs": {"a": 1, "b": None}, "address": {"street": "Main", "zip": None},
        "billing": {"street": "Side", "zip": "1234"}, "note": None,
    }
    value.update(changes)
    return value


def spark_view(value: dict[str, Any]) -> dict[str, Any]:
    """The documented mapping of Confluent's objects to spark-avro's values: uuid as text, time-millis as the
    milliseconds of the day, unions of several types as {memberN: ...}."""
    out = dict(value, ref=str(value["ref"]))
    opened = value["opened"]
    out["opened"] = ((opened.hour * 60 + opened.minute) * 60 + opened.second) * 1000 + opened.microsecond // 1000
    note = value["note"]
    members = {"member0": None, "member1": None, "member2": None}
    if isinstance(note, str):
        out["note"] = {**members, "member0": note}
    elif isinstance(note, int):
        out["note"] = {**members, "member1": note}
    elif isinstance(note, dict):
        out["note"] = {**members, "member2": note}
    return out


ORDERS = [order(1), order(2, score=2.5, note="text", billing=None, tags=[], attrs={}),
          order(3, note=7, status="SHIPPED", amount=decimal.Decimal("0.01")),
          order(4, note={"street": "Third", "zip": None}, score=-0.0)]


def test_what_confluent_writes_decodes_to_the_objects_it_was_given() -> None:
    client = new_registry()
    framed = [serialize(client, ORDER, value) for value in ORDERS]
    reader = ConfluentSource(client).latest("orders-value")
    decoder = avro_decoder(reader, ConfluentSource(client))
    assert decoded(decoder, framed) == [spark_view(v) for v in ORDERS]


def test_what_we_write_confluent_reads_back() -> None:
    client = new_registry()
    writer_id = register(client, "orders-value", ORDER)
    source = ConfluentSource(client)
    writer = source.latest("orders-value")
    decoder = avro_decoder(writer, source)
    encoder = avro_encoder(writer, source)
    assert encoder.schema == writer
    column = pa.array([decoder.decode(writer_id, (), bytes(split(serialize(client, ORDER, v), False)[2]))
                       for v in ORDERS], type=decoder.arrow_type)
    deserializer = AvroDeserializer(client)
    for value, original in zip(column.to_pylist(), ORDERS, strict=True):
        indexes, payload = encoder.encode(value)
        assert indexes == ()
        assert deserializer(frame(writer_id, payload), VALUE) == original


def test_a_schema_made_by_avro_schema_for_round_trips_column_values() -> None:
    t = pa.struct([("id", pa.int64()), ("price", pa.decimal128(10, 3)), ("at", pa.timestamp("us", tz="UTC")),
                   ("local", pa.timestamp("us")), ("day", pa.date32()), ("tm", pa.time64("ns")),
                   ("took", pa.duration("us")), ("tags", pa.list_(pa.string())),
                   ("attrs", pa.map_(pa.string(), pa.struct([("n", pa.int32())]))),
                   ("inner", pa.struct([("x", pa.float64()), ("y", pa.binary())]))])
    values = [
        {"id": 1, "price": decimal.Decimal("3.141"), "at": datetime.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
         "local": datetime.datetime(2020, 1, 2, 3, 4, 5, 6), "day": datetime.date(1999, 12, 31),
         "tm": datetime.time(1, 2, 3, 4), "took": datetime.timedelta(days=-2, microseconds=5),
         "tags": ["a", None], "attrs": [("k", {"n": 3}), ("nil", None)], "inner": {"x": 1.25, "y": b"\x00"}},
        {"id": None, "price": None, "at": None, "local": None, "day": None, "tm": None, "took": None,
         "tags": None, "attrs": None, "inner": None},
    ]
    column = pa.array(values, type=t)
    client = new_registry()
    schema_id = register(client, "t-value", json.loads(avro_schema_for(t)))
    source = ConfluentSource(client)
    schema = source.latest("t-value")
    encoder, decoder = avro_encoder(schema, source), avro_decoder(schema, source)
    assert decoder.arrow_type == t
    payloads = [encoder.encode(v)[1] for v in column.to_pylist()]
    assert pa.array([decoder.decode(schema_id, (), p) for p in payloads], type=t) == column
    theirs = [AvroDeserializer(client)(frame(schema_id, p), VALUE) for p in payloads]
    assert theirs[0]["price"] == decimal.Decimal("3.141")
    assert theirs[0]["took"] == -2 * 86_400_000_000 + 5  # a long of microseconds, with Spark's property on it
    assert theirs[0]["attrs"] == {"k": {"n": 3}, "nil": None}


def test_complex_unions_written_by_confluent_and_read_back_by_it() -> None:
    point = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}
    label = {"type": "record", "name": "Label", "fields": [{"name": "x", "type": "int"}]}
    schema = {"type": "record", "name": "U", "namespace": "u", "fields": [
        {"name": "either", "type": [point, label]},
        {"name": "kind", "type": ["string", {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}]},
        {"name": "num", "type": ["null", "int", "double", "boolean"]}]}
    values = [{"either": ("u.Label", {"x": 1}), "kind": ("u.Kind", "A"), "num": 1.5},
              {"either": ("u.Point", {"x": 2}), "kind": "A", "num": True},
              {"either": ("u.Label", {"x": 3}), "kind": "free", "num": None}]
    client = new_registry()
    framed = [serialize(client, schema, v) for v in values]
    source = ConfluentSource(client)
    decoder = avro_decoder(source.latest("orders-value"), source)
    out = decoded(decoder, framed)
    assert out == [
        {"either": {"member0": None, "member1": {"x": 1}}, "kind": {"member0": None, "member1": "A"},
         "num": {"member0": None, "member1": 1.5, "member2": None}},
        {"either": {"member0": {"x": 2}, "member1": None}, "kind": {"member0": "A", "member1": None},
         "num": {"member0": None, "member1": None, "member2": True}},
        {"either": {"member0": None, "member1": {"x": 3}}, "kind": {"member0": "free", "member1": None},
         "num": None}]
    encoder = avro_encoder(source.latest("orders-value"), source)
    deserializer = AvroDeserializer(client, return_record_name=True)
    back = [deserializer(frame(1, encoder.encode(v)[1]), VALUE) for v in out]
    assert [b["either"] for b in back] == [("u.Label", {"x": 1}), ("u.Point", {"x": 2}), ("u.Label", {"x": 3})]
    assert [b["kind"] for b in back] == ["A", "A", "free"]
    assert [b["num"] for b in back] == [1.5, True, None]


def test_references_are_resolved_through_the_registry() -> None:
    client = new_registry()
    register(client, "address", ADDRESS)
    customer = {"type": "record", "name": "Customer", "namespace": "com.shop", "fields": [
        {"name": "home", "type": "com.shop.Address"}]}
    register(client, "customer", customer, [ConfluentReference("com.shop.Address", "address", 1)])
    invoice = {"type": "record", "name": "Invoice", "namespace": "com.shop", "fields": [
        {"name": "to", "type": "com.shop.Customer"}, {"name": "ship", "type": ["null", "com.shop.Address"]}]}
    refs = [ConfluentReference("com.shop.Customer", "customer", 1),
            ConfluentReference("com.shop.Address", "address", 1)]
    value = {"to": {"home": {"street": "Elm", "zip": "9"}}, "ship": {"street": "Oak", "zip": None}}
    framed = serialize(client, invoice, value, refs)
    source = ConfluentSource(client)
    reader = source.latest("orders-value")
    assert len(reader.references) == 2
    decoder = avro_decoder(reader, source)
    assert decoded(decoder, [framed]) == [value]
    payload = avro_encoder(reader, source).encode(value)[1]
    assert AvroDeserializer(client)(frame(split(framed, False)[0], payload), VALUE) == value


# ---- evolution ------------------------------------------------------------------------------------

def evolve(writer: Any, reader: Any, values: list[Any]) -> tuple[list[Any], Any, int]:
    """Values written with `writer` (subject orders-value) and decoded with `reader` (subject reader-value)."""
    client = new_registry()
    framed = [serialize(client, writer, v) for v in values]
    register(client, "reader-value", reader)
    source = ConfluentSource(client)
    decoder = avro_decoder(source.latest("reader-value"), source)
    return [decoder.decode(split(f, False)[0], (), bytes(split(f, False)[2])) for f in framed], decoder, \
        split(framed[0], False)[0]


def record(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "R", "namespace": "ev", "fields": list(fields)}


def test_a_reader_field_with_a_default_is_filled_in() -> None:
    out, _, _ = evolve(record({"name": "id", "type": "long"}),
                       record({"name": "id", "type": "long"}, {"name": "email", "type": "string", "default": "none"},
                              {"name": "tier", "type": ["null", "int"], "default": None}),
                       [{"id": 1}])
    assert out == [{"id": 1, "email": "none", "tier": None}]


def test_a_writer_field_the_reader_lacks_is_dropped() -> None:
    out, _, _ = evolve(record({"name": "id", "type": "long"}, {"name": "extra", "type": {"type": "array",
                                                                                          "items": "string"}}),
                       record({"name": "id", "type": "long"}), [{"id": 5, "extra": ["a", "b"]}])
    assert out == [{"id": 5}]


def test_promotions() -> None:
    out, decoder, _ = evolve(
        record({"name": "n", "type": "int"}, {"name": "f", "type": "float"}, {"name": "s", "type": "string"},
               {"name": "b", "type": "bytes"}, {"name": "l", "type": "long"}),
        record({"name": "n", "type": "long"}, {"name": "f", "type": "double"}, {"name": "s", "type": "bytes"},
               {"name": "b", "type": "string"}, {"name": "l", "type": "double"}),
        [{"n": 7, "f": 1.5, "s": "hé", "b": b"ok", "l": 1 << 40}])
    assert decoder.arrow_type == pa.struct([("n", pa.int64()), ("f", pa.float64()), ("s", pa.binary()),
                                            ("b", pa.string()), ("l", pa.float64())])
    assert pa.array(out, type=decoder.arrow_type).to_pylist() == [
        {"n": 7, "f": 1.5, "s": "hé".encode(), "b": "ok", "l": float(1 << 40)}]


def test_an_unknown_enum_symbol_takes_the_readers_default() -> None:
    out, _, _ = evolve(record({"name": "c", "type": {"type": "enum", "name": "C", "symbols": ["RED", "PURPLE"]}}),
                       record({"name": "c", "type": {"type": "enum", "name": "C", "symbols": ["RED", "OTHER"],
                                                      "default": "OTHER"}}),
                       [{"c": "PURPLE"}, {"c": "RED"}])
    assert out == [{"c": "OTHER"}, {"c": "RED"}]


def test_the_readers_logical_types_read_the_writers_numbers() -> None:
    # Java Avro and spark-avro apply the reader's logical type to the resolved value
    out, decoder, _ = evolve(record({"name": "t", "type": "long"}),
                             record({"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}),
                             [{"t": 1_000}])
    assert pa.array(out, type=decoder.arrow_type).to_pylist() == [
        {"t": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)}]


@pytest.mark.parametrize("reader", [
    record({"name": "id", "type": "long"}, {"name": "must", "type": "string"}),
    record({"name": "id", "type": "string"}),
    {"type": "record", "name": "Other", "namespace": "ev", "fields": [{"name": "id", "type": "long"}]},
])
def test_a_writer_the_reader_cannot_read_names_both_schemas(reader: Any) -> None:
    with pytest.raises(PayloadError) as failure:
        evolve(record({"name": "id", "type": "long"}), reader, [{"id": 1}])
    message = str(failure.value)
    assert "writer schema id 1" in message
    assert "subject 'reader-value' version 1 id 2" in message


def test_payloads_of_several_writer_ids_share_one_decoder_and_each_writer_is_looked_up_once() -> None:
    client = new_registry()
    v1 = record({"name": "id", "type": "long"})
    v2 = record({"name": "id", "type": "long"}, {"name": "name", "type": "string", "default": "?"})
    framed = [serialize(client, v1, {"id": 1}), serialize(client, v2, {"id": 2, "name": "b"}),
              serialize(client, v1, {"id": 3})]
    source = ConfluentSource(client)
    decoder = avro_decoder(source.latest("orders-value"), source)
    lookups = source.lookups
    assert decoded(decoder, framed * 3) == [{"id": 1, "name": "?"}, {"id": 2, "name": "b"}, {"id": 3, "name": "?"}] * 3
    assert source.lookups - lookups == 1  # the reader's own id needs none


# ---- property ---------------------------------------------------------------------------------------

PROPERTY = {"type": "record", "name": "P", "fields": [
    {"name": "n", "type": "long"}, {"name": "s", "type": "string"}, {"name": "d", "type": ["null", "double"]},
    {"name": "xs", "type": {"type": "array", "items": "int"}}, {"name": "m", "type": {"type": "map", "values":
                                                                                     "string"}},
    {"name": "u", "type": ["null", "int", "string"]},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 4}}]}

_values = st.fixed_dictionaries({
    "n": st.integers(-(2 ** 63), 2 ** 63 - 1), "s": st.text(max_size=20),
    "d": st.none() | st.floats(allow_nan=False), "xs": st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), max_size=5),
    "m": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    "u": st.none() | st.integers(-(2 ** 31), 2 ** 31 - 1) | st.text(max_size=5),
    "ts": st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30),
                       timezones=st.just(UTC)),
    "dec": st.decimals(min_value=-(10 ** 14) + 1, max_value=10 ** 14 - 1, places=4, allow_nan=False),
})


class _Codec:
    """One registry, serializer, deserializer, decoder and encoder for every example."""

    def __init__(self) -> None:
        self.client = new_registry()
        self.serializer = AvroSerializer(self.client, Schema(json.dumps(PROPERTY), "AVRO"),
                                         conf={"auto.register.schemas": True})
        self.serializer({"n": 0, "s": "", "d": None, "xs": [], "m": {}, "u": None, "dec": decimal.Decimal(0),
                         "ts": datetime.datetime(2000, 1, 1, tzinfo=UTC)}, VALUE)
        self.deserializer = AvroDeserializer(self.client)
        source = ConfluentSource(self.client)
        schema = source.latest("orders-value")
        self.decoder, self.encoder = avro_decoder(schema, source), avro_encoder(schema, source)


_codec: list[_Codec] = []


@settings(max_examples=40)
@given(value=_values)
def test_confluent_round_trips_random_records(value: dict[str, Any]) -> None:
    if not _codec:
        _codec.append(_Codec())
    codec = _codec[0]
    u = value["u"]
    expected = dict(value, u=None if u is None else {"member0": u if isinstance(u, int) else None,
                                                     "member1": u if isinstance(u, str) else None})
    out = decoded(codec.decoder, [bytes(codec.serializer(value, VALUE))])
    assert out == [expected]
    column = pa.array(out, type=codec.decoder.arrow_type)
    payload = codec.encoder.encode(column.to_pylist()[0])[1]
    assert codec.deserializer(frame(1, payload), VALUE) == value
