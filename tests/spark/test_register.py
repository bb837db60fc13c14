"""Explicit registration works alongside Spark's automatic lookup and yields Spark's Kafka schema."""

from __future__ import annotations

import kafka_spark


def test_register_then_load_gives_sparks_kafka_schema(spark):
    kafka_spark.register(spark)
    ours = (spark.read.format("pykafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
            .option("subscribe", "t").option("includeHeaders", "true").load())
    theirs = (spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
              .option("subscribe", "t").option("includeHeaders", "true").load())
    assert ours.schema == theirs.schema
    assert ours.columns[-1] == "headers"
