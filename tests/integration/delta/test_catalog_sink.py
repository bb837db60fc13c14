"""Streams and loads into a catalog table by name (Spark's built-in catalog): created on first use
like saveAsTable (by Spark's writer), found again by name, resumed exactly, and written by the direct writer
once it exists."""

from __future__ import annotations

import uuid

from delta_support import latest_offsets_of, produce_numbered, run_available_now

from kafka_spark.delta import committed_position, load
from kafka_spark.delta.catalog import catalog_location
from kafka_spark.delta.writer_choice import NEW_CATALOG_TABLE
from kafka_spark.sink import LoadOptions, StreamOptions


def test_a_stream_creates_a_catalog_table_and_a_batch_load_continues_it(spark, kafka, producer, topic_name):
    kafka.create_topic(topic_name, partitions=2)
    produce_numbered(producer, topic_name, 150)
    name = f"default.events_{uuid.uuid4().hex[:8]}"
    kafka_conf = {"bootstrap.servers": kafka.bootstrap}
    try:
        writers: list[tuple[str, str | None]] = []
        stream = StreamOptions(table=name, kafka=kafka_conf, topics=[topic_name], sink_id="events",
                               trigger="available-now", max_offsets_per_trigger=100, partition_by=["partition"],
                               on_commit=lambda _, r: writers.append((r.writer, r.writer_reason)))
        assert run_available_now(spark, stream) == 150
        # The micro-batch that created the table went through Spark's writer, the next one through the direct one.
        assert writers == [("spark", NEW_CATALOG_TABLE), ("direct", None)]
        location = catalog_location(spark, name)
        assert location is not None
        detail = spark.sql(f"DESCRIBE DETAIL {name}").first()
        assert detail["format"] == "delta" and detail["partitionColumns"] == ["partition"]
        # The checkpoint went beside the table, not into the working directory.
        assert stream.checkpoint_location == f"{location}/_kafka_spark/checkpoints/events"
        first = committed_position(name, "events", spark)
        assert first is not None and first.batch == 1  # 100 + 50

        # Restarted by name, then continued by a batch load of the same sink: one position.
        produce_numbered(producer, topic_name, 30, start=150)
        assert run_available_now(spark, stream) == 30
        assert writers[2:] == [("direct", None)]
        produce_numbered(producer, topic_name, 40, start=180)
        result = load(spark, LoadOptions(table=name, kafka=kafka_conf, topics=[topic_name], sink_id="events"))
        assert result.status == "committed" and result.batch == 3 and result.rows == 40
        assert (result.writer, result.writer_reason) == ("direct", None)
        # The catalog sees the direct commits: its history, its partitions, its rows.
        history = spark.sql(f"DESCRIBE HISTORY {name}").orderBy("version").collect()
        assert [h["operation"] for h in history][:2] == ["CREATE TABLE", "WRITE"]
        assert len(history) == 5 and history[-1]["readVersion"] == 3
        assert spark.table(name).where("partition = 1").count() == sum(
            end for tp, end in latest_offsets_of(kafka.bootstrap, topic_name).items() if tp.partition == 1)

        ends = latest_offsets_of(kafka.bootstrap, topic_name)
        position = committed_position(name, "events", spark)
        assert position is not None and position.batch == 3 and position.offsets == ends
        rows = spark.table(name).select("partition", "offset").collect()
        keys = [(r["partition"], r["offset"]) for r in rows]
        assert len(keys) == len(set(keys)) == 220
        assert set(keys) == {(tp.partition, o) for tp, end in ends.items() for o in range(end)}
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_a_routed_load_into_catalog_tables_creates_them_then_writes_them_directly(spark, kafka, producer,
                                                                                  topic_name):
    from kafka_spark.delta import load_tables
    from kafka_spark.sink import Routing

    prefix = f"cat{uuid.uuid4().hex[:6]}"
    topics = [f"{prefix}-a", f"{prefix}-b"]
    for topic in topics:
        kafka.create_topic(topic)
        produce_numbered(producer, topic, 5)
    opts = LoadOptions(kafka={"bootstrap.servers": kafka.bootstrap}, pattern=f"^{prefix}-", sink_id="bronze",
                       routing=Routing(template="default.{topic}"))
    names = [f"default.{t.replace('-', '_')}" for t in topics]
    try:
        first = load_tables(spark, opts)
        assert {(r.writer, r.writer_reason) for r in first.tables} == {("spark", NEW_CATALOG_TABLE)}
        for topic in topics:
            produce_numbered(producer, topic, 3, start=5)
        second = load_tables(spark, opts)
        assert [(r.writer, r.rows) for r in second.tables] == [("direct", 3), ("direct", 3)]
        for name in names:
            offsets = sorted(r["offset"] for r in spark.table(name).collect())
            assert offsets == list(range(8)), name
    finally:
        for name in names:
            spark.sql(f"DROP TABLE IF EXISTS {name}")
