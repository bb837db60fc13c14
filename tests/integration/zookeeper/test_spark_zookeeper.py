"""`pykafka` and the Delta sink through `kafka.zookeeper.connect`: the same rows as through the brokers, loads
that continue where an old consumer's ZooKeeper offsets stand, positions published back there, and streams
that ride out a ZooKeeper restart and an ensemble member going away with exact output."""

from __future__ import annotations

import time
from pathlib import Path

from deltalake import DeltaTable
from zk_support import latest, produce, shell_get, shell_write_offsets

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta import committed_position, load, start_stream
from kafka_spark.sink import LoadOptions, StreamOptions
from kafka_spark.zookeeper.offsets import offset_path

COLUMNS = ["topic", "partition", "offset", "key", "value", "timestamp", "timestampType"]


def batch_rows(spark, options: dict[str, str]) -> list[tuple]:
    reader = spark.read.format("pykafka")
    for k, v in options.items():
        reader = reader.option(k, v)
    return sorted(tuple(r) for r in reader.load().select(*COLUMNS).collect())


def stream_rows(spark, options: dict[str, str], name: str, checkpoint: Path) -> list[tuple]:
    reader = spark.readStream.format("pykafka")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (reader.load().select(*COLUMNS).writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(180)
    finally:
        query.stop()
    return sorted(tuple(r) for r in spark.table(name).collect())


def test_reads_through_zookeeper_equal_reads_through_the_brokers(spark, kafka39, kafka39_legacy, topic_name,
                                                                  tmp_path):
    for n, broker in enumerate((kafka39, kafka39_legacy)):  # at the root, and under the chroot /legacy
        broker.create_topic(topic_name, partitions=3)
        produce(broker.bootstrap, topic_name, 60 + n)
        via_zk = {"kafka.zookeeper.connect": broker.zookeeper_connect, "subscribe": topic_name,
                  "startingOffsets": "earliest"}
        via_brokers = {**via_zk, "kafka.bootstrap.servers": broker.bootstrap}
        del via_brokers["kafka.zookeeper.connect"]
        rows = batch_rows(spark, via_zk)
        assert len(rows) == 60 + n and rows == batch_rows(spark, via_brokers)
    # A stream, under the chroot (each stream costs seconds of Spark's start-up; one pair proves the point).
    streamed = stream_rows(spark, via_zk, "via_zk", tmp_path / "zk")
    assert streamed == stream_rows(spark, via_brokers, "via_brokers", tmp_path / "b") == rows


def test_starting_offsets_from_a_zookeeper_group(spark, kafka39, topic_name):
    kafka39.create_topic(topic_name, partitions=3)
    produce(kafka39.bootstrap, topic_name, 90)
    group = f"camus-{topic_name}"
    # The old consumer stood at 10 and 25 of partitions 0 and 1; it never read partition 2.
    shell_write_offsets(kafka39.zookeeper_connect, group, {TopicPartition(topic_name, 0): 10,
                                                            TopicPartition(topic_name, 1): 25})
    rows = batch_rows(spark, {"kafka.zookeeper.connect": kafka39.zookeeper_connect, "subscribe": topic_name,
                              "startingOffsetsFromZooKeeperGroup": group})
    firsts = {p: min(o for _, q, o, *_ in rows if q == p) for p in range(3)}
    assert firsts == {0: 10, 1: 25, 2: 0} and len(rows) == 90 - 35


def test_a_load_starts_at_the_old_consumers_offsets_and_publishes_there(spark, kafka39, topic_name, tmp_path):
    kafka39.create_topic(topic_name, partitions=3)
    produce(kafka39.bootstrap, topic_name, 60)
    group = f"legacy-{topic_name}"
    shell_write_offsets(kafka39.zookeeper_connect, group, {TopicPartition(topic_name, p): 5 * (p + 1)
                                                            for p in range(3)})
    options = LoadOptions(table=str(tmp_path / "t"), kafka={"zookeeper.connect": kafka39.zookeeper_connect},
                          topics=[topic_name], start_zookeeper_group=group, publish_zookeeper_group=group)
    first = load(spark, options)
    assert first.start == {TopicPartition(topic_name, p): 5 * (p + 1) for p in range(3)} and first.rows == 30
    produce(kafka39.bootstrap, topic_name, 30, start=60)
    assert load(spark, options).rows == 30
    ends = latest(kafka39.bootstrap, topic_name)
    assert_exact(tmp_path / "t", topic_name, ends, starts={p: 5 * (p + 1) for p in range(3)})
    # ZooKeeper's own shell reads the published positions as the old consumers wrote them.
    assert_published(kafka39.zookeeper_connect, group, ends)


def assert_exact(table: Path, topic: str, ends: dict[TopicPartition, int], starts: dict[int, int] | None = None):
    """Rows = distinct (topic, partition, offset) = every offset from the start, read by delta-rs."""
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["topic", "partition", "offset"]).to_pylist()
    keys = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)), "a record was written twice"
    assert set(keys) == {(topic, tp.partition, o) for tp, end in ends.items()
                         for o in range((starts or {}).get(tp.partition, 0), end)}


def assert_published(connect: str, group: str, ends: dict[TopicPartition, int]) -> None:
    paths = {offset_path(group, tp.topic, tp.partition): str(end) for tp, end in ends.items()}
    assert shell_get(connect, sorted(paths)) == paths


def wait_committed(table: Path, sink: str, ends: dict[TopicPartition, int], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        position = committed_position(str(table), sink) if (table / "_delta_log").exists() else None
        if position is not None and position.offsets == ends:
            return
        time.sleep(0.3)
    raise AssertionError(f"the stream did not commit {ends} in {timeout}s")


def stream_through(spark, broker, zk_event, topic: str, table: Path) -> None:
    """Stream `topic` into `table` via ZooKeeper, publishing to it; `zk_event(stage)` disturbs ZooKeeper."""
    group = f"stream-{topic}"
    options = StreamOptions(table=str(table), topics=[topic], sink_id="zk", trigger="500ms",
                            kafka={"zookeeper.connect": broker.zookeeper_connect,
                                   "zookeeper.connection.timeout.ms": "60000"},
                            publish_zookeeper_group=group)
    produce(broker.bootstrap, topic, 60)
    query = start_stream(spark, options)
    try:
        wait_committed(table, "zk", latest(broker.bootstrap, topic))
        zk_event("down")
        produce(broker.bootstrap, topic, 60, start=60)  # a micro-batch commits, then waits for ZooKeeper
        time.sleep(2)
        zk_event("up")
        produce(broker.bootstrap, topic, 60, start=120)
        ends = latest(broker.bootstrap, topic)
        wait_committed(table, "zk", ends)
        # Published after the commit: poll until the last micro-batch's publish is through.
        deadline = time.monotonic() + 60
        while True:
            try:
                assert_published(broker.zookeeper_connect, group, ends)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert query.exception() is None
    finally:
        query.stop()
    assert_exact(table, topic, ends)


def test_a_stream_survives_a_zookeeper_restart(spark, kafka39, zookeeper, topic_name, tmp_path):
    kafka39.create_topic(topic_name, partitions=3)
    stream_through(spark, kafka39, lambda stage: zookeeper.stop() if stage == "down" else zookeeper.start(),
                   topic_name, tmp_path / "t")


def test_a_stream_survives_an_ensemble_member_going_away(spark, ensemble_kafka, ensemble, topic_name, tmp_path):
    ensemble_kafka.create_topic(topic_name, partitions=3)
    lost = ensemble.nodes[0]
    try:
        stream_through(spark, ensemble_kafka, lambda stage: lost.stop() if stage == "down" else None,
                       topic_name, tmp_path / "t")
    finally:
        lost.start()
