"""Avro values into Delta: decoded rows in the table, undecodable ones in the dead-letter table with the reason
and their original bytes (or a BadRecordError naming the offset), and the table's schema following the subject."""

from __future__ import annotations

import pytest
from registry_records import ORDER_V1, ORDER_V2, avro_serializer, order, produce, serialize

from kafka_spark.delta import load
from kafka_spark.formats.registry.wire import frame
from kafka_spark.sink import BadRecordError, LoadOptions


def options(kafka, registry, topic: str, table: str, **extra) -> LoadOptions:
    return LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       value_format="avro", schema_registry={"url": registry.url}, **extra)


def test_decoded_rows_and_dead_letters_commit_together(spark, kafka, registry, confluent_registry, topic_name,
                                                       tmp_path):
    kafka.create_topic(topic_name)
    good = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [order(i) for i in range(6)])
    bad = [b"\x07junk", frame(424_242, b"\x00")]
    produce(kafka.bootstrap, topic_name, [*good[:3], bad[0], *good[3:], bad[1]])
    table, dead = str(tmp_path / "orders"), str(tmp_path / "orders-dead")

    with pytest.raises(BadRecordError) as failure:
        load(spark, options(kafka, registry, topic_name, table))
    assert (failure.value.topic, failure.value.partition, failure.value.offset) == (topic_name, 0, 3)
    assert "magic byte 0x07" in failure.value.reason

    result = load(spark, options(kafka, registry, topic_name, table, dead_letter=dead))
    assert result.rows == 6 and result.dead_letters == 2
    rows = spark.read.format("delta").load(table).orderBy("offset").collect()
    assert [r["value"]["id"] for r in rows] == list(range(6))
    assert "valueError" not in rows[0].asDict() and "rawValue" not in rows[0].asDict()
    letters = spark.read.format("delta").load(dead).orderBy("offset").collect()
    assert [(r["offset"], bytes(r["value"])) for r in letters] == [(3, bad[0]), (7, bad[1])]
    assert "424242" in letters[1]["error"]
    # The batch with dead letters went through Spark's writer; the next, clean one is written by the tasks.
    assert result.writer == "spark" and "2 record(s) for the dead-letter table" in result.writer_reason
    produce(kafka.bootstrap, topic_name, serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name,
                                                   [order(i) for i in range(6, 9)]))
    clean = load(spark, options(kafka, registry, topic_name, table, dead_letter=dead))
    assert (clean.writer, clean.rows, clean.dead_letters, clean.start) == ("direct", 3, 0, result.offsets)
    assert [r["value"]["id"] for r in spark.read.format("delta").load(table).orderBy("offset").collect()] == list(
        range(9))


def test_table_gains_the_fields_a_newer_schema_adds_with_merge_schema(spark, kafka, registry, confluent_registry,
                                                                     topic_name, tmp_path):
    kafka.create_topic(topic_name)
    table = str(tmp_path / "orders")
    produce(kafka.bootstrap, topic_name,
            serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [order(i) for i in range(3)]))
    assert load(spark, options(kafka, registry, topic_name, table)).rows == 3

    newer = [{**order(i), "channel": "app"} for i in range(3, 5)]
    produce(kafka.bootstrap, topic_name, serialize(avro_serializer(confluent_registry, ORDER_V2), topic_name, newer))
    with pytest.raises(Exception, match=r"(?i)schema"):
        load(spark, options(kafka, registry, topic_name, table))
    assert load(spark, options(kafka, registry, topic_name, table, merge_schema=True)).rows == 2

    rows = spark.read.format("delta").load(table).orderBy("offset").collect()
    assert [(r["value"]["id"], r["value"]["channel"]) for r in rows] == [
        (0, None), (1, None), (2, None), (3, "app"), (4, "app")]


def test_json_schema_values_into_delta_with_invalid_ones_as_dead_letters(spark, kafka, registry, confluent_registry,
                                                                          topic_name, tmp_path):
    import json

    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    schema = {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
              "required": ["sku", "qty"]}
    good = serialize(JSONSerializer(json.dumps(schema), confluent_registry), topic_name,
                     [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}])
    assert good[0] is not None
    invalid = good[0][:5] + b'{"sku":"c","qty":0}'  # framed with the same id, but breaks `minimum`
    kafka.create_topic(topic_name)
    produce(kafka.bootstrap, topic_name, [good[0], invalid, good[1]])
    table, dead = str(tmp_path / "items"), str(tmp_path / "items-dead")

    result = load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                                     value_format="json-schema", schema_registry={"url": registry.url},
                                     dead_letter=dead))
    assert (result.rows, result.dead_letters) == (2, 1)
    rows = spark.read.format("delta").load(table).orderBy("offset").collect()
    assert [r["value"].asDict() for r in rows] == [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]
    letter = spark.read.format("delta").load(dead).collect()[0]
    assert letter["offset"] == 1 and bytes(letter["value"]) == invalid and "minimum" in letter["error"]
