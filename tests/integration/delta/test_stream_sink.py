"""Kafka -> Delta streams: every micro-batch's rows and offsets in one commit, across restarts, lost
checkpoints, replays and other writers. SIGKILLs of the driver while a producer keeps writing: in the suite
the routed stream's (test_routing.py) and the evolving Avro stream's (formats/test_stream_avro_evolution.py); the
one-table schedule with both writers taking turns is formats/test_stream_avro_sigkill.py's (long schedule)."""

from __future__ import annotations

import itertools
import json
import shutil
import time
from pathlib import Path

import pytest
from delta_support import (
    latest_offsets_of,
    produce_numbered,
)
from deltalake import DeltaTable

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.groups.admin import GroupAdmin
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta import CheckpointMismatchError, committed_position, load, start_stream
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, StreamOptions

SINK = "stream"


def options(kafka, topic: str, table: Path, **extra) -> StreamOptions:
    return StreamOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                         sink_id=SINK, starting="earliest", **extra)


def run(spark, opts: StreamOptions):
    query = start_stream(spark, opts)
    try:
        assert query.awaitTermination(300), "the AvailableNow stream did not finish"
    finally:
        query.stop()
    return query


def assert_exact(table: Path, topic: str, ends: dict[TopicPartition, int]) -> None:
    """Rows = distinct (topic, partition, offset) = every offset produced, read by delta-rs, not Spark."""
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["topic", "partition", "offset"]).to_pylist()
    keys = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)), "a record was written twice"
    expected = {(topic, tp.partition, o) for tp, end in ends.items() for o in range(end)}
    assert set(keys) == expected


def test_restarts_and_a_lost_checkpoint_continue_exactly(spark, kafka, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=3)
    produce_numbered(producer, topic_name, 300)
    table = tmp_path / "table"
    results = []
    opts = options(kafka, topic_name, table, max_offsets_per_trigger=100, on_commit=lambda _b, r: results.append(r))
    run(spark, opts)
    sizes = [r.rows for r in results]
    assert sum(sizes) == 300 and len(sizes) == 4 and max(sizes) <= 100  # Spark's shares: floors, under the cap
    assert committed_position(str(table), SINK).batch == 3
    produce_numbered(producer, topic_name, 40, start=300)
    run(spark, opts)
    assert committed_position(str(table), SINK).batch == 4

    # The checkpoint is lost: the stream starts again from the offsets in the table.

    shutil.rmtree(opts.checkpoint_location)
    produce_numbered(producer, topic_name, 40, start=340)
    results.clear()
    run(spark, opts)
    assert sum(r.rows for r in results) == 40
    position = committed_position(str(table), SINK)
    assert position.batch == 5
    assert_exact(table, topic_name, latest_offsets_of(kafka.bootstrap, topic_name))
    # delta-rs sees the sink's txn version and the offsets in the last commit's metadata.
    dt = DeltaTable(str(table))
    assert dt.transaction_version(f"kafka-spark/{SINK}") == 5
    meta = json.loads(dt.history(1)[0]["userMetadata"])
    assert meta["batch"] == 5 and meta["offsets"][topic_name] == {
        str(tp.partition): off for tp, off in position.offsets.items()}


def test_batch_loads_and_streams_of_one_sink_continue_each_other(spark, kafka, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    produce_numbered(producer, topic_name, 100)
    table = tmp_path / "table"
    # One SQL transform for both: a micro-batch's view lives in the stream's own session.
    sql = "SELECT topic, partition, offset, CAST(value AS STRING) AS text FROM kafka"
    loaded = load(spark, LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap},
                                     topics=[topic_name], sink_id=SINK, max_records=60, transform=sql))
    assert loaded.rows == 60
    run(spark, options(kafka, topic_name, table, transform=sql))
    assert committed_position(str(table), SINK).batch == 1
    produce_numbered(producer, topic_name, 30, start=100)
    after = load(spark, LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap},
                                    topics=[topic_name], sink_id=SINK, transform=sql))
    assert after.rows == 30 and after.batch == 2
    assert_exact(table, topic_name, latest_offsets_of(kafka.bootstrap, topic_name))
    assert DeltaTable(str(table)).schema().fields[-1].name == "text"


def test_a_replayed_micro_batch_is_not_written_twice(spark, kafka, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    produce_numbered(producer, topic_name, 120)
    table = tmp_path / "table"
    opts = options(kafka, topic_name, table, max_offsets_per_trigger=50)
    run(spark, opts)
    versions = DeltaTable(str(table)).version()
    # As if the driver died after the Delta commit but before Spark's commit log: Spark replays the batch.
    commits = Path(opts.checkpoint_location) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    run(spark, opts)
    assert DeltaTable(str(table)).version() == versions, "the replayed micro-batch made a new commit"
    assert_exact(table, topic_name, latest_offsets_of(kafka.bootstrap, topic_name))


def test_a_checkpoint_behind_the_table_is_refused(spark, kafka, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    produce_numbered(producer, topic_name, 20)
    table = tmp_path / "table"
    opts = options(kafka, topic_name, table)
    run(spark, opts)
    produce_numbered(producer, topic_name, 10, start=20)
    # Another writer (a batch load of the same sink) moves the table past the checkpoint's position.
    load(spark, LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                            sink_id=SINK, max_records=5))
    produce_numbered(producer, topic_name, 10, start=30)
    query = start_stream(spark, opts)
    try:
        with pytest.raises(Exception, match="starts elsewhere than the table") as info:
            query.awaitTermination(300)
        assert CheckpointMismatchError.__name__ in str(info.value)
    finally:
        query.stop()
    assert DeltaTable(str(table)).to_pyarrow_table().num_rows == 25


def test_committed_offsets_are_published_to_a_consumer_group(spark, kafka, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    produce_numbered(producer, topic_name, 50)
    group = f"{topic_name}-lag"
    table = tmp_path / "table"
    run(spark, options(kafka, topic_name, table, publish_group=group))
    position = committed_position(str(table), SINK)
    with Cluster({"bootstrap.servers": kafka.bootstrap}) as cluster:
        published = GroupAdmin(cluster).committed(group)
    assert {tp: c.offset for tp, c in published.items()} == position.offsets
    # Kafka's own lag tool sees the stream, caught up.
    out = kafka.tools.run("consumer-groups", "--describe", "--group", group).stdout
    lags = [line.split() for line in out.splitlines() if line.startswith(group)]
    assert len(lags) == 2 and all(cols[5] == "0" for cols in lags), out


COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def test_a_direct_written_stream_lands_every_record_once_across_triggers_and_restarts(spark, kafka, producer,
                                                                                      topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=3)
    produce_numbered(producer, topic_name, 300)
    table = tmp_path / "table"
    results = []
    opts = options(kafka, topic_name, table, writer="direct", trigger="200ms", max_offsets_per_trigger=100,
                   on_commit=lambda _b, r: results.append(r))
    query = start_stream(spark, opts)
    try:
        deadline = time.monotonic() + 120
        while sum(r.rows for r in results) < 300 and time.monotonic() < deadline and query.isActive:
            time.sleep(0.2)
        produce_numbered(producer, topic_name, 30, start=300)  # picked up by a later trigger of the same query
        while sum(r.rows for r in results) < 330 and time.monotonic() < deadline and query.isActive:
            time.sleep(0.2)
    finally:
        query.stop()
    assert query.exception() is None
    produce_numbered(producer, topic_name, 40, start=330)
    opts.trigger = "available-now"
    run(spark, opts)

    assert len(results) >= 5 and {r.writer for r in results} == {"direct"}
    assert [r.batch for r in results] == list(range(len(results)))
    for before, after in itertools.pairwise(results):
        assert after.start == before.offsets  # each micro-batch begins where the last commit ended
    assert results[-1].rows == 40 and sum(r.rows for r in results) == 370
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    assert committed_position(str(table), SINK).offsets == ends
    assert_exact(table, topic_name, ends)
    rs = DeltaTable(str(table)).to_pyarrow_table(columns=COLUMNS).to_pylist()
    # Spark's rows hold the session's (UTC) local time, delta-rs's the UTC instant.
    by_delta_rs = sorted((*(r[c] for c in COLUMNS[:-2]), r["timestamp"].replace(tzinfo=None), r["timestampType"])
                         for r in rs)
    by_spark = sorted(tuple(r) for r in spark.read.format("delta").load(str(table)).select(*COLUMNS).collect())
    assert by_spark == by_delta_rs


def test_the_direct_writer_on_a_table_it_cannot_serve_fails_at_start_and_auto_uses_sparks(spark, kafka, producer,
                                                                                          topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    produce_numbered(producer, topic_name, 10)
    table = tmp_path / "table"
    sql = "SELECT topic, partition, offset, CAST(value AS STRING) AS text FROM kafka"
    with pytest.raises(ConfigError, match=r"writer 'direct' cannot write to .*a transform makes the rows in Spark SQL"):
        start_stream(spark, options(kafka, topic_name, table, writer="direct", transform=sql))
    assert not table.exists() and not spark.streams.active
    results = []
    run(spark, options(kafka, topic_name, table, writer="auto", transform=sql,
                       on_commit=lambda _b, r: results.append(r)))
    assert [(r.writer, r.writer_reason, r.rows) for r in results] == [
        ("spark", "a transform makes the rows in Spark SQL", 10)]
