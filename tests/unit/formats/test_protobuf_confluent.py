"""The Protobuf codec against Confluent's own ProtobufSerializer / ProtobufDeserializer on an in-memory
registry: what they write we read with Spark's values, and what we write they read."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unit.formats.codec_support import (
    VALUE,
    ConfluentSource,
    compile_protos,
    deserializer,
    message_class,
    new_registry,
    serializer,
    unframe,
)

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.protobuf.codec import protobuf_decoder, protobuf_encoder
from kafka_spark.formats.registry.wire import frame

MONEY = """
syntax = "proto3";
package shop.common;
message Money { string currency = 1; int64 units = 2; int32 nanos = 3; }
"""

ORDER = """
syntax = "proto3";
package shop;
import "common/money.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/any.proto";
import "google/protobuf/empty.proto";

message Customer { string name = 1; int32 tier = 2; }

message Order {
  enum Status { STATUS_UNKNOWN = 0; NEW = 1; SHIPPED = 2; }
  message Line { string sku = 1; uint32 quantity = 2; common.Money price = 3; }
  int64 id = 1;
  string note = 2;
  Status status = 3;
  repeated Line lines = 4;
  map<string, string> labels = 5;
  map<int32, Line> by_position = 6;
  google.protobuf.Timestamp created = 7;
  google.protobuf.Duration ttl = 8;
  google.protobuf.StringValue coupon = 9;
  google.protobuf.Any extra = 10;
  google.protobuf.Empty nothing = 11;
  oneof payment { string card = 12; int64 account = 13; }
  bytes blob = 14;
  double total = 15;
  float weight = 16;
  bool gift = 17;
  optional int32 priority = 18;
  Customer customer = 19;
}
"""


@pytest.fixture(scope="module")
def pool():
    return compile_protos({"common/money.proto": MONEY, "shop/order.proto": ORDER})


@pytest.fixture
def registry():
    client = new_registry()
    return client, ConfluentSource(client)


def order_message(pool):
    order_cls = message_class(pool, "shop.Order")
    customer = message_class(pool, "shop.Customer")(name="ann", tier=2)
    order = order_cls(id=42, status=order_cls.Status.Value("NEW"), card="visa", blob=b"\x00\x01", total=9.5,
                      weight=0.25, gift=False, priority=0)
    line = order.lines.add(sku="a", quantity=2)
    line.price.currency = "EUR"
    line.price.units = 3
    order.labels["k"] = "v"
    order.by_position[1].sku = "b"
    # the pool has its own well-known classes: fields are set one by one
    order.created.seconds, order.created.nanos = 1_700_000_000, 123_456_789
    order.ttl.seconds, order.ttl.nanos = -1, -500_000_000
    order.coupon.value = "SAVE"
    order.extra.type_url = "type.googleapis.com/shop.Customer"
    order.extra.value = customer.SerializeToString()
    order.nothing.SetInParent()
    return order, order.extra.value


def expected_order(customer_bytes: bytes) -> dict:
    line = {"sku": "a", "quantity": 2, "price": {"currency": "EUR", "units": 3, "nanos": None}}
    return {
        "id": 42, "note": None, "status": "NEW", "lines": [line], "labels": [("k", "v")],
        "by_position": [(1, {"sku": "b", "quantity": None, "price": None})],
        "created": 1_700_000_000_123_456, "ttl": -1_500_000, "coupon": {"value": "SAVE"},
        "extra": {"type_url": "type.googleapis.com/shop.Customer", "value": customer_bytes},
        "card": "visa", "account": None, "blob": b"\x00\x01", "total": 9.5, "weight": 0.25, "gift": None,
        "priority": 0, "customer": None,
    }


def test_reads_what_confluent_writes(pool, registry):
    client, source = registry
    order, customer_bytes = order_message(pool)
    schema_id, indexes, payload = unframe(serializer(client, type(order))(order, VALUE))
    assert indexes == (1,)
    reader = source.latest("orders-value")
    assert [r.name for r in reader.references] == ["common/money.proto"]
    decoder = protobuf_decoder(reader, source, message_name="shop.Order")
    value = decoder.decode(schema_id, indexes, payload)
    assert value == expected_order(customer_bytes)
    # google.protobuf.Empty has no fields: Spark drops such a field
    assert "nothing" not in decoder.arrow_type.names
    column = pa.array([value, None], type=decoder.arrow_type)
    row = column.to_pylist()[0]
    assert row["created"] == datetime.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=datetime.timezone.utc)
    assert row["ttl"] == datetime.timedelta(seconds=-1.5)
    assert dict(row["labels"]) == {"k": "v"}


def test_reads_proto_source_with_references(pool, registry):
    # The registry stores and returns .proto source, its imports as references (what Java clients register).
    client, source = registry
    source.register("common/money.proto", RegisteredSchema(MONEY, "PROTOBUF"))
    money = source.latest("common/money.proto")
    text = source.register("text-value", RegisteredSchema(
        ORDER, "PROTOBUF", (SchemaReference("common/money.proto", "common/money.proto", money.version),)))
    order, customer_bytes = order_message(pool)
    _, indexes, payload = unframe(serializer(client, type(order))(order, VALUE))
    decoder = protobuf_decoder(text, source, message_name="shop.Order")
    assert decoder.decode(text.id, indexes, payload) == expected_order(customer_bytes)
    # the writer's schema may be the base64 registration, the reader's the .proto source: names agree
    base64_id = client.get_latest_version("orders-value").schema_id
    assert decoder.decode(base64_id, indexes, payload) == expected_order(customer_bytes)


def test_first_message_is_the_default_and_nested_messages_have_their_indexes(pool, registry):
    client, source = registry
    customer_cls = message_class(pool, "shop.Customer")
    line_cls = message_class(pool, "shop.Order.Line")
    customer_id, customer_indexes, customer_payload = unframe(
        serializer(client, customer_cls)(customer_cls(name="bo", tier=0), VALUE))
    line_id, line_indexes, line_payload = unframe(serializer(client, line_cls)(line_cls(sku="z", quantity=7), VALUE))
    assert customer_indexes == (0,)
    assert line_indexes == (1, 0)
    reader = source.latest("orders-value")
    first = protobuf_decoder(reader, source)
    assert first.message_name == "shop.Customer"
    assert first.decode(customer_id, customer_indexes, customer_payload) == {"name": "bo", "tier": None}
    nested = protobuf_decoder(reader, source, message_name="shop.Order.Line")
    assert nested.decode(line_id, line_indexes, line_payload) == {"sku": "z", "quantity": 7, "price": None}
    with pytest.raises(PayloadError, match=r"shop\.Customer.*shop\.Order\.Line"):
        nested.decode(customer_id, customer_indexes, customer_payload)
    with pytest.raises(PayloadError, match="name no message"):
        nested.decode(line_id, (1, 5), line_payload)


EVOLVED_WRITER = """
syntax = "proto3";
package evo;
message Item { string name = 1; int32 count = 2; string added_by_writer = 3; repeated int64 codes = 4; }
"""
EVOLVED_READER = """
syntax = "proto3";
package evo;
message Item { string name = 1; int32 count = 2; double added_by_reader = 5; optional string maybe = 6; }
"""


def test_schema_evolution_skips_unknown_fields_and_defaults_new_ones(registry):
    client, source = registry
    writer_cls = message_class(compile_protos({"evo/item.proto": EVOLVED_WRITER}), "evo.Item")
    data = serializer(client, writer_cls)(writer_cls(name="n", count=3, added_by_writer="w", codes=[1, 2]), VALUE)
    schema_id, indexes, payload = unframe(data)
    reader = source.register("reader-value", RegisteredSchema(EVOLVED_READER, "PROTOBUF"))
    assert protobuf_decoder(reader, source).decode(schema_id, indexes, payload) == {
        "name": "n", "count": 3, "added_by_reader": None, "maybe": None}
    emitting = protobuf_decoder(reader, source, {"emit.default.values": "true"})
    assert emitting.decode(schema_id, indexes, payload) == {
        "name": "n", "count": 3, "added_by_reader": 0.0, "maybe": None}


def test_a_field_written_with_another_type_fails_the_record(registry):
    client, source = registry
    writer_cls = message_class(compile_protos({"evo/item.proto": EVOLVED_WRITER}), "evo.Item")
    clashing = EVOLVED_READER.replace("int32 count = 2", "string count = 2")
    reader = source.register("clash-value", RegisteredSchema(clashing, "PROTOBUF"))
    schema_id, indexes, payload = unframe(serializer(client, writer_cls)(writer_cls(count=5), VALUE))
    with pytest.raises(PayloadError, match=r"evo\.Item\.count"):
        protobuf_decoder(reader, source).decode(schema_id, indexes, payload)
    assert protobuf_decoder(reader, source, {"mode": "PERMISSIVE"}).decode(schema_id, indexes, payload) is None


def test_unknown_schema_id_and_other_formats_are_payload_errors(pool, registry):
    client, source = registry
    order, _ = order_message(pool)
    _, indexes, payload = unframe(serializer(client, type(order))(order, VALUE))
    decoder = protobuf_decoder(source.latest("orders-value"), source, message_name="shop.Order")
    with pytest.raises(PayloadError, match="schema id 999"):
        decoder.decode(999, indexes, payload)
    avro = source.register("avro-value", RegisteredSchema('"string"', "AVRO"))
    with pytest.raises(PayloadError, match="AVRO, not PROTOBUF"):
        decoder.decode(avro.id, indexes, payload)
    with pytest.raises(ConfigError, match=r"no message 'shop\.Nope'"):
        protobuf_decoder(source.latest("orders-value"), source, message_name="shop.Nope")


def test_confluent_reads_what_we_write(pool, registry):
    client, source = registry
    order, customer_bytes = order_message(pool)
    serializer(client, type(order))(order, VALUE)  # registers the schema with its reference
    writer = source.latest("orders-value")
    encoder = protobuf_encoder(writer, source, "shop.Order")
    decoder = protobuf_decoder(writer, source, message_name="shop.Order")
    # the value as an Arrow column hands it back: datetimes, timedeltas, (key, value) lists
    value = pa.array([expected_order(customer_bytes)], type=decoder.arrow_type).to_pylist()[0]
    indexes, payload = encoder.encode(value)
    assert indexes == (1,)
    back = deserializer(client, type(order))(frame(writer.id, payload, indexes), VALUE)
    order.ClearField("nothing")  # Spark's type has no field for an empty message, so it is not written
    order.created.nanos = 123_456_000  # the column holds microseconds
    assert back == order
    assert decoder.decode(writer.id, indexes, payload) == expected_order(customer_bytes)


def test_confluent_reads_nested_messages_we_write(pool, registry):
    client, source = registry
    line_cls = message_class(pool, "shop.Order.Line")
    serializer(client, line_cls)(line_cls(sku="q"), VALUE)
    writer = source.latest("orders-value")
    indexes, payload = protobuf_encoder(writer, source, "shop.Order.Line").encode(
        {"sku": "x", "quantity": -1, "price": {"currency": "USD", "units": None, "nanos": 5}})
    assert indexes == (1, 0)
    back = deserializer(client, line_cls)(frame(writer.id, payload, indexes), VALUE)
    # Spark's int column holds a uint32's bits: -1 is 2**32 - 1
    assert back == line_cls(sku="x", quantity=2**32 - 1, price={"currency": "USD", "nanos": 5})


@pytest.mark.parametrize(("value", "field"), [
    ({"id": "not a number"}, r"shop\.Order\.id"),
    ({"status": "LOST"}, r"shop\.Order\.status.*LOST"),
    ({"lines": [{"sku": 5}]}, r"shop\.Order\.lines\[0\]\.sku"),
    ({"lines": {"sku": "a"}}, r"shop\.Order\.lines: expected a list"),
    ({"created": "yesterday"}, r"shop\.Order\.created"),
    ({"labels": [("k", 1)]}, r"shop\.Order\.labels\['k'\]"),
    ({"colour": "red"}, r"shop\.Order: message shop\.Order has no field 'colour'"),
    (["not", "a", "dict"], r"shop\.Order: expected a dict"),
])
def test_values_that_do_not_fit_name_the_field(pool, registry, value, field):
    client, source = registry
    order, _ = order_message(pool)
    serializer(client, type(order))(order, VALUE)
    encoder = protobuf_encoder(source.latest("orders-value"), source, "shop.Order")
    with pytest.raises(PayloadError, match=field):
        encoder.encode(value)


@pytest.fixture(scope="module")
def fuzz_decoder():
    client = new_registry()
    source = ConfluentSource(client)
    pool = compile_protos({"common/money.proto": MONEY, "shop/order.proto": ORDER})
    order, _ = order_message(pool)
    schema_id, indexes, _ = unframe(serializer(client, type(order))(order, VALUE))
    decoder = protobuf_decoder(source.latest("orders-value"), source, message_name="shop.Order")
    return decoder, schema_id, indexes


@settings(max_examples=150)
@given(st.binary(max_size=200))
def test_random_bytes_give_a_value_or_a_payload_error(fuzz_decoder, data):
    decoder, schema_id, indexes = fuzz_decoder
    try:
        value = decoder.decode(schema_id, indexes, data)
    except PayloadError:
        return
    pa.array([value], type=decoder.arrow_type)
