"""`write.format("pykafka")` / `writeStream.format("pykafka")` with `valueFormat`: struct values serialised in the
task with a registered schema, in Confluent's wire format, which Confluent's own deserializers read back to the
same objects; the writer schema as Confluent's serializer settings choose it, and bad settings failing the write
before any task runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from harness.protos import message_class
from registry_records import ORDER_V1, order

# ORDER_V1 as Spark types (spark-avro's mapping); the enum is a string column.
ORDER_DDL = ("id bigint, customer string, amount decimal(12,2), placed timestamp, day date, tags array<string>, "
             "attrs map<string,bigint>, status string, address struct<street:string,zip:string>, score double")
ORDER_PROTO = """
syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string customer = 2;
  repeated string tags = 3;
  map<string, int64> attrs = 4;
  message Address { string street = 1; }
  Address address = 5;
}
"""
ORDER_JSON = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "shop.Order", "type": "object",
              "properties": {"id": {"type": "integer"}, "customer": {"type": "string"},
                             "tags": {"type": "array", "items": {"type": "string"}}},
              "required": ["id"], "additionalProperties": False}


def orders_df(spark, count: int, topic: str | None = None):
    """`count` orders as struct values (then one tombstone), with string keys and, given `topic`, a topic column."""
    rows = [(f"k{i}", order(i)) for i in range(count)] + [("gone", None)]
    df = spark.createDataFrame(rows, f"key string, value struct<{ORDER_DDL}>").coalesce(1)  # offsets in order
    return df if topic is None else df.selectExpr(f"'{topic}' as topic", "*")


def write(df, kafka, registry, mode: str = "append", **options: str) -> None:
    (df.write.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
     .option("schema.registry.url", registry.url).options(**options).mode(mode).save())


def landed(spark, kafka, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record of `topic`, in offset order, read with Spark's own Kafka source."""
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
            .load().orderBy("partition", "offset").collect())
    return [(r.key, r.value) for r in rows]


def deserialized(deserializer: Any, topic: str, values: list[bytes | None]) -> list[Any]:
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [None if v is None else deserializer(bytes(v), ctx) for v in values]


def test_structs_written_as_avro_with_an_auto_registered_schema(spark, kafka, registry, confluent_registry,
                                                                topic_name):
    kafka.create_topic(topic_name)
    write(orders_df(spark, 4), kafka, registry, topic=topic_name, valueFormat="avro")

    records = landed(spark, kafka, topic_name)
    assert [k for k, _ in records] == [b"k0", b"k1", b"k2", b"k3", b"gone"]
    assert records[-1][1] is None  # the tombstone stays one
    latest = confluent_registry.get_latest_version(f"{topic_name}-value")
    assert latest.version == 1
    assert {bytes(v[1:5]) for _, v in records if v is not None} == {latest.schema_id.to_bytes(4, "big")}
    values = deserialized(AvroDeserializer(confluent_registry), topic_name, [v for _, v in records])
    assert values == [*(order(i) for i in range(4)), None]

    write(orders_df(spark, 1), kafka, registry, topic=topic_name, valueFormat="avro")
    assert confluent_registry.get_versions(f"{topic_name}-value") == [1]  # registering again is idempotent


def test_use_latest_version_writes_with_the_subjects_schema_and_each_rows_topic(spark, kafka, registry,
                                                                               confluent_registry, topic_name):
    topics = [f"{topic_name}-a", f"{topic_name}-b"]
    ids = []
    for topic in topics:
        kafka.create_topic(topic)
        ids.append(confluent_registry.register_schema(f"{topic}-value", Schema(json.dumps(ORDER_V1), "AVRO")))
    df = orders_df(spark, 2, topics[0]).union(orders_df(spark, 2, topics[1]).where("value is not null"))
    write(df, kafka, registry, valueFormat="avro", **{"use.latest.version": "true"})

    for topic, schema_id in zip(topics, ids, strict=True):
        values = [v for _, v in landed(spark, kafka, topic)]
        assert {bytes(v[1:5]) for v in values if v is not None} == {schema_id.to_bytes(4, "big")}
        # written with the registered schema: the enum and the named records come back as Confluent wrote them
        read = deserialized(AvroDeserializer(confluent_registry), topic, values)
        assert sorted((v for v in read if v is not None), key=lambda v: v["id"]) == [order(0), order(1)]
        assert confluent_registry.get_versions(f"{topic}-value") == [1]


def test_protobuf_and_json_schema_with_registered_schemas(spark, kafka, registry, confluent_registry, topic_name):
    proto_topic, json_topic = f"{topic_name}-proto", f"{topic_name}-json"
    for topic in (proto_topic, json_topic):
        kafka.create_topic(topic)
    confluent_registry.register_schema(f"{proto_topic}-value", Schema(ORDER_PROTO, "PROTOBUF"))
    confluent_registry.register_schema(f"{json_topic}-value", Schema(json.dumps(ORDER_JSON), "JSON"))
    df = spark.createDataFrame(
        [(i, f"c{i}", [f"t{i}"], {"n": i}, {"street": f"{i} Main St"}) for i in range(3)],
        "id bigint, customer string, tags array<string>, attrs map<string,bigint>, address struct<street:string>"
    ).coalesce(1)
    latest = {"use.latest.version": "true"}

    with pytest.raises(Exception, match=r"Register the \.proto under the subject first"):
        write(df.selectExpr("struct(*) as value"), kafka, registry, topic=proto_topic, valueFormat="protobuf")
    write(df.selectExpr("struct(*) as value"), kafka, registry, topic=proto_topic, valueFormat="protobuf", **latest)
    order_class = message_class({"order.proto": ORDER_PROTO}, "shop.Order")
    messages = deserialized(ProtobufDeserializer(order_class, {"use.deprecated.format": False}), proto_topic,
                            [v for _, v in landed(spark, kafka, proto_topic)])
    assert [(m.id, m.customer, list(m.tags), dict(m.attrs), m.address.street) for m in messages] == [
        (i, f"c{i}", [f"t{i}"], {"n": i}, f"{i} Main St") for i in range(3)]

    write(df.selectExpr("struct(id, customer, tags) as value"), kafka, registry, topic=json_topic,
          valueFormat="json-schema", exactlyOnce="true", **latest)
    values = deserialized(JSONDeserializer(json.dumps(ORDER_JSON), schema_registry_client=confluent_registry),
                          json_topic, [v for _, v in landed(spark, kafka, json_topic)])
    assert values == [{"id": i, "customer": f"c{i}", "tags": [f"t{i}"]} for i in range(3)]


@pytest.mark.parametrize("exactly_once", ["false", "true"])
def test_stream_writes_each_micro_batch_with_the_registered_schema(spark, kafka, registry, confluent_registry,
                                                                    topic_name, tmp_path, exactly_once):
    kafka.create_topic(topic_name)
    source = tmp_path / "in"
    source.mkdir()
    (source / "part-0.json").write_text("\n".join(json.dumps({"id": i, "name": f"n{i}"}) for i in range(5)))
    query = (spark.readStream.schema("id bigint, name string").json(str(source))
             .selectExpr("cast(id as string) as key", "struct(id, name) as value")
             .writeStream.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
             .option("schema.registry.url", registry.url).option("topic", topic_name).option("valueFormat", "avro")
             .option("exactlyOnce", exactly_once)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert query.exception() is None
    values = deserialized(AvroDeserializer(confluent_registry), topic_name, [v for _, v in landed(spark, kafka,
                                                                                                 topic_name)])
    assert sorted(values, key=lambda v: v["id"]) == [{"id": i, "name": f"n{i}"} for i in range(5)]


def test_bad_settings_fail_before_tasks_and_bad_values_fail_the_task(spark, kafka, registry, confluent_registry,
                                                                     topic_name):
    kafka.create_topic(topic_name)
    subject = f"{topic_name}-value"
    confluent_registry.register_schema(subject, Schema(json.dumps(
        {"type": "record", "name": "topLevelRecord", "fields": [{"name": "id", "type": "long"},
                                                                 {"name": "name", "type": "string"}]}), "AVRO"))
    changed = spark.createDataFrame([("x", "a")], "id string, name string").selectExpr("struct(*) as value")
    with pytest.raises(Exception, match=rf"subject '{subject}' as incompatible"):
        write(changed, kafka, registry, topic=topic_name, valueFormat="avro")
    with pytest.raises(Exception, match=rf"no subject '{topic_name}-key'"):
        write(changed.selectExpr("'k' as key", "value"), kafka, registry, topic=topic_name, valueFormat="avro",
              keyFormat="avro", **{"use.latest.version": "true", "auto.register.schemas": "false"})
    assert landed(spark, kafka, topic_name) == []

    nameless = spark.createDataFrame([(1, "a"), (2, None)], "id bigint, name string").selectExpr("struct(*) as value")
    with pytest.raises(Exception, match=rf"topic '{topic_name}'.*subject '{subject}'.*name"):
        write(nameless.coalesce(1), kafka, registry, topic=topic_name, valueFormat="avro",
              **{"use.latest.version": "true"})
