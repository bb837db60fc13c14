"""Kafka -> Delta streams: every micro-batch's rows and offsets in one commit, across restarts, lost
checkpoints, replays and other writers. SIGKILLs of the driver while a producer keeps writing are
tests/integration/formats/test_stream_avro_sigkill.py's (the same stream, its values decoded on the way)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from delta_support import (
    latest_offsets_of,
    produce_numbered,
)
from deltalake import DeltaTable

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.groups import GroupAdmin
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta import (
    CheckpointMismatchError,
    LoadOptions,
    StreamOptions,
    committed_position,
    load,
    start_stream,
)

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
    opts = options(kafka, topic_name, table, max_offsets_per_trigger=100)
    first = run(spark, opts)
    sizes = [p.numInputRows for p in first.recentProgress]
    assert sum(sizes) == 300 and len(sizes) == 4 and max(sizes) <= 100  # Spark's shares: floors, under the cap
    assert committed_position(str(table), SINK).batch == 3
    produce_numbered(producer, topic_name, 40, start=300)
    run(spark, opts)
    assert committed_position(str(table), SINK).batch == 4

    # The checkpoint is lost: the stream starts again from the offsets in the table.

    shutil.rmtree(opts.checkpoint_location)
    produce_numbered(producer, topic_name, 40, start=340)
    again = run(spark, opts)
    assert sum(p.numInputRows for p in again.recentProgress) == 40
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
