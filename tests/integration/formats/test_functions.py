"""`kafka_spark.functions` over DataFrames of bytes: Confluent-framed values made by Confluent's own serializers
decode to the serializers' objects, and what the functions write Confluent's deserializers read back; plain
payloads with a schema given inline (a descriptor set for Protobuf) as Spark's own functions read them."""

from __future__ import annotations

import io
import json
from typing import Any
from zoneinfo import ZoneInfo

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from harness.protos import descriptor_set, message_class
from harness.schema_registry import RegistryServer
from registry_records import ORDER_V1, avro_serializer, order, serialize

from kafka_spark.functions import from_avro, from_json_schema, from_protobuf, to_avro, to_json_schema, to_protobuf

ORDER_PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string customer = 2;
  map<string, int64> attrs = 3;
  google.protobuf.Timestamp placed = 4;
  message Line { string sku = 1; int32 quantity = 2; }
  repeated Line lines = 5;
}
"""
PROTO_FILES = {"shop/order.proto": ORDER_PROTO}
ORDER_JSON = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "title": "Order",
              "properties": {"id": {"type": "integer"}, "customer": {"type": "string"},
                             "tags": {"type": "array", "items": {"type": "string"}},
                             "attrs": {"type": "object", "additionalProperties": {"type": "number"}}},
              "required": ["id"]}


def spark_view(spark, value: dict[str, Any]) -> dict[str, Any]:
    """An order as Spark collects it: timestamps naive in the session's time zone."""
    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone"))
    return {**value, "placed": value["placed"].astimezone(zone).replace(tzinfo=None)}


def binary_df(spark, values: list[bytes | None]):
    return spark.createDataFrame([(v,) for v in values], "value binary").coalesce(1)


def collected(df) -> list[Any]:
    return [None if r[0] is None else r[0].asDict(recursive=True) for r in df.collect()]


def deserialized(deserializer: Any, topic: str, values: list[Any]) -> list[Any]:
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [None if v is None else deserializer(bytes(v), ctx) for v in values]


def test_from_avro_reads_confluent_framed_values_and_to_avro_writes_them(spark, registry, confluent_registry,
                                                                        topic_name):
    subject = f"{topic_name}-value"
    orders = [order(i) for i in range(4)]
    framed = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [*orders, None])
    df = binary_df(spark, framed)
    decoded = df.select(from_avro("value", subject=subject, schemaRegistryAddress=registry.url).alias("order"))
    assert decoded.schema["order"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,amount:decimal(12,2),placed:timestamp,day:date,tags:array<string>,"
        "attrs:map<string,bigint>,status:string,address:struct<street:string,zip:string>,score:double>")
    assert collected(decoded) == [*(spark_view(spark, o) for o in orders), None]

    # written with the registered schema given as jsonFormatSchema: Confluent reads the very objects back
    encoded = decoded.select(to_avro("order", json.dumps(ORDER_V1), subject=subject,
                                     schemaRegistryAddress=registry.url).alias("bytes")).collect()
    assert deserialized(AvroDeserializer(confluent_registry), topic_name, [r.bytes for r in encoded]) == [
        *orders, None]
    assert confluent_registry.get_versions(subject) == [1]


def test_to_avro_registers_the_derived_schema_only_when_asked(spark, registry, confluent_registry, topic_name):
    subject = f"{topic_name}-value"
    df = spark.createDataFrame([(1, "a"), (2, None)], "id bigint, name string").selectExpr("struct(*) as v")
    with pytest.raises(Exception, match=rf"not registered under subject '{subject}'"):
        df.select(to_avro("v", subject=subject, schemaRegistryAddress=registry.url)).collect()
    from pyspark.sql.functions import lit

    encoded = df.select(to_avro("v", subject=lit(subject), schemaRegistryAddress=registry.url,
                                options={"auto.register.schemas": "true"})).collect()
    assert deserialized(AvroDeserializer(confluent_registry), topic_name, [r[0] for r in encoded]) == [
        {"id": 1, "name": "a"}, {"id": 2, "name": None}]
    registered = json.loads(confluent_registry.get_latest_version(subject).schema.schema_str)
    assert registered["name"] == "topLevelRecord"


def test_plain_avro_with_an_inline_schema_and_bad_values_by_mode(spark, registry, confluent_registry, topic_name):
    schema = json.dumps(ORDER_V1)
    parsed = fastavro.parse_schema(json.loads(schema))
    plain = []
    for o in (order(1), order(2)):
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, o)
        plain.append(buffer.getvalue())
    df = binary_df(spark, [*plain, None])
    assert collected(df.select(from_avro("value", schema))) == [spark_view(spark, order(1)),
                                                               spark_view(spark, order(2)), None]
    written = df.select(from_avro("value", schema).alias("o")).select(to_avro("o", schema)).collect()
    assert [None if r[0] is None else fastavro.schemaless_reader(io.BytesIO(r[0]), parsed) for r in written] == [
        order(1), order(2), None]

    subject = f"{topic_name}-value"
    framed = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [order(3)])
    mixed = binary_df(spark, [*framed, b"\x07junk"])
    permissive = mixed.select(from_avro("value", options={"mode": "PERMISSIVE"}, subject=subject,
                                        schemaRegistryAddress=registry.url))
    assert [r[0] is None for r in permissive.collect()] == [False, True]
    with pytest.raises(Exception, match=r"from_avro: a value does not decode .*magic byte 0x07.*PERMISSIVE"):
        mixed.select(from_avro("value", subject=subject, schemaRegistryAddress=registry.url)).collect()


def test_protobuf_with_a_registry_and_with_a_descriptor_file(spark, registry, confluent_registry, topic_name,
                                                             tmp_path):
    import datetime

    order_class = message_class(PROTO_FILES, "shop.Order")
    messages = []
    for i in range(1, 4):  # without emit.default.values, a proto3 field at its default (0) reads as null
        m = order_class(id=i, customer=f"c{i}", attrs={"n": i})
        m.placed.FromDatetime(datetime.datetime(2026, 1, 1, 0, 0, i))
        m.lines.add(sku=f"s{i}", quantity=i + 1)
        messages.append(m)
    expected = [{"id": i, "customer": f"c{i}", "attrs": {"n": i},
                 "placed": spark_view(spark, {"placed": datetime.datetime(
                     2026, 1, 1, 0, 0, i, tzinfo=datetime.timezone.utc)})["placed"],
                 "lines": [{"sku": f"s{i}", "quantity": i + 1}]} for i in range(1, 4)]

    subject = f"{topic_name}-value"
    serializer = ProtobufSerializer(order_class, confluent_registry, {"use.deprecated.format": False})
    framed = serialize(serializer, topic_name, messages)
    registry_options = {"schema.registry.subject": subject, "schema.registry.address": registry.url}
    decoded = binary_df(spark, framed).select(from_protobuf("value", options=registry_options).alias("o"))
    assert collected(decoded) == expected
    encoded = decoded.select(to_protobuf("o", options=registry_options)).collect()
    back = deserialized(ProtobufDeserializer(order_class, {"use.deprecated.format": False}), topic_name,
                        [r[0] for r in encoded])
    assert back == messages

    desc = tmp_path / "order.desc"
    desc.write_bytes(descriptor_set(PROTO_FILES))
    plain = binary_df(spark, [m.SerializeToString() for m in messages])
    from_file = plain.select(from_protobuf("value", "shop.Order", descFilePath=str(desc)).alias("o"))
    assert collected(from_file) == expected
    written = from_file.select(to_protobuf("o", "Order", binaryDescriptorSet=desc.read_bytes())).collect()
    assert [order_class.FromString(r[0]) for r in written] == messages


def test_json_schema_from_a_registry_and_inline(spark, registry, confluent_registry, topic_name):
    subject = f"{topic_name}-value"
    values = [{"id": i, "customer": f"c{i}", "tags": [f"t{i}"], "attrs": {"x": i / 2}} for i in range(3)]
    serializer = JSONSerializer(json.dumps(ORDER_JSON), confluent_registry)
    framed = serialize(serializer, topic_name, [*values, None])
    decoded = binary_df(spark, framed).select(
        from_json_schema("value", subject=subject, schemaRegistryAddress=registry.url).alias("o"))
    assert decoded.schema["o"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,tags:array<string>,attrs:map<string,double>>")
    assert collected(decoded) == [*values, None]

    plain = spark.createDataFrame([(json.dumps(v),) for v in values], "value string").coalesce(1)
    inline = plain.select(from_json_schema("value", json.dumps(ORDER_JSON)).alias("o"))
    assert collected(inline) == values
    written = inline.select(to_json_schema("o", json.dumps(ORDER_JSON), subject=subject,
                                           schemaRegistryAddress=registry.url)).collect()
    assert [bytes(r[0])[5:] for r in written] == [json.dumps(v, separators=(",", ":")).encode() for v in values]


def test_databricks_registry_options_authenticate_and_keep_the_secret_out_of_errors(spark, topic_name):
    password = "s3cr3t-pw-9d1"
    with RegistryServer(users={"alice": password}) as secured:
        client = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": f"alice:{password}"})
        framed = serialize(avro_serializer(client, ORDER_V1), topic_name, [order(5)])
        df = binary_df(spark, framed)
        options = {"confluent.schema.registry.basic.auth.credentials.source": "USER_INFO",
                   "confluent.schema.registry.basic.auth.user.info": f"alice:{password}"}
        decoded = df.select(from_avro("value", options=options, subject=f"{topic_name}-value",
                                      schemaRegistryAddress=secured.url))
        assert collected(decoded) == [spark_view(spark, order(5))]
        with pytest.raises(Exception, match="refused the credentials") as refused:
            from_avro("value", options={**options, "confluent.schema.registry.basic.auth.user.info": "alice:wrong"},
                      subject=f"{topic_name}-value", schemaRegistryAddress=secured.url)
        assert password not in str(refused.value) and "wrong" not in str(refused.value)
        with pytest.raises(Exception, match="Java key store"):
            from_avro("value", options={"confluent.schema.registry.ssl.truststore.location": "/x.jks"},
                      subject="s", schemaRegistryAddress=secured.url)
