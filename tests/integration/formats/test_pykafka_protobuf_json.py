"""`format("pykafka")` with `valueFormat=protobuf` and `json-schema`: records framed by Confluent's own serializers
(a nested message with non-zero message indexes, an imported type, a map and a Timestamp; a JSON Schema object)
decode in the fetching task to what the serializers were given."""

from __future__ import annotations

import datetime
import json

from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from harness.protos import message_class
from registry_records import produce, serialize

MONEY = """syntax = "proto3";
package shop.common;
message Money { string currency = 1; int64 cents = 2; }
"""
ORDERS = """syntax = "proto3";
package shop;
import "common/money.proto";
import "google/protobuf/timestamp.proto";
message Envelope {
  string source = 1;
  message Order {
    int64 id = 1;
    shop.common.Money total = 2;
    repeated string tags = 3;
    map<string, int32> counts = 4;
    google.protobuf.Timestamp placed = 5;
    oneof contact { string email = 6; string phone = 7; }
  }
}
"""
FILES = {"common/money.proto": MONEY, "shop/orders.proto": ORDERS}
PERSON = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                         "emails": {"type": "array", "items": {"type": "string"}},
                         "address": {"type": "object", "properties": {"city": {"type": "string"}}}},
          "required": ["name"]}


def test_protobuf_nested_message_with_imports_decodes(spark, kafka, registry, confluent_registry, topic_name):
    kafka.create_topic(topic_name)
    order = message_class(FILES, "shop.Envelope.Order")
    serializer = ProtobufSerializer(order, confluent_registry, {"use.deprecated.format": False})
    placed = datetime.datetime(2026, 3, 1, 12, 0, 5, 250000, tzinfo=datetime.timezone.utc)
    messages = []
    for i in range(4):
        message = order(id=i, tags=[f"t{i}"] * i, counts={"a": i})
        message.total.currency, message.total.cents = "EUR", 100 * i
        message.placed.FromDatetime(placed)
        if i % 2:
            message.email = f"u{i}@example.com"
        messages.append(message)
    produce(kafka.bootstrap, topic_name, serialize(serializer, topic_name, messages))

    df = (spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
          .option("subscribe", topic_name).option("valueFormat", "protobuf")
          .option("valueMessageName", "shop.Envelope.Order").option("schema.registry.url", registry.url).load())
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,total:struct<currency:string,cents:bigint>,tags:array<string>,counts:map<string,int>,"
        "placed:timestamp,email:string,phone:string>")
    rows = [r["value"].asDict(recursive=True) for r in df.orderBy("offset").collect()]
    # a proto3 scalar at its default is not on the wire: null, as Spark's from_protobuf reads it
    assert [r["id"] for r in rows] == [None, 1, 2, 3]
    assert [r["total"] for r in rows[1:]] == [{"currency": "EUR", "cents": 100 * i} for i in range(1, 4)]
    assert [r["tags"] for r in rows] == [[], ["t1"], ["t2", "t2"], ["t3"] * 3]
    assert [r["counts"] for r in rows[1:]] == [{"a": i} for i in range(1, 4)]
    assert [r["email"] for r in rows] == [None, "u1@example.com", None, "u3@example.com"]
    assert rows[0]["phone"] is None
    zone = datetime.timezone.utc if spark.conf.get("spark.sql.session.timeZone") == "UTC" else None
    assert rows[2]["placed"] == placed.astimezone(zone).replace(tzinfo=None)


def test_json_schema_values_decode_and_keys_too(spark, kafka, registry, confluent_registry, topic_name):
    kafka.create_topic(topic_name)
    serializer = JSONSerializer(json.dumps(PERSON), confluent_registry)
    people = [{"name": "ann", "age": 41, "emails": ["a@x"], "address": {"city": "Oslo"}},
              {"name": "bob", "emails": []}]
    key_schema = {"type": "object", "properties": {"id": {"type": "integer"}}}
    keys = serialize(JSONSerializer(json.dumps(key_schema), confluent_registry), topic_name, [{"id": 1}, {"id": 2}],
                     field="key")
    produce(kafka.bootstrap, topic_name, serialize(serializer, topic_name, people), keys=keys)

    df = (spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
          .option("subscribe", topic_name).option("valueFormat", "json-schema").option("keyFormat", "json-schema")
          .option("schema.registry.url", registry.url).load())
    assert df.schema["value"].dataType.simpleString() == (
        "struct<name:string,age:bigint,emails:array<string>,address:struct<city:string>>")
    rows = df.orderBy("offset").collect()
    assert [r["key"]["id"] for r in rows] == [1, 2]
    assert [r["value"].asDict(recursive=True) for r in rows] == [
        people[0], {"name": "bob", "age": None, "emails": [], "address": None}]
