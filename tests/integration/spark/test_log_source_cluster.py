"""`format("pykafka-log")` on the log dirs of a 3-broker cluster reads each partition once (from the replica
with the most data, or from the log dir the user names) and equals `format("pykafka")` and Spark's
`format("kafka")` on the cluster; on Kafka 3.9 topics of message formats v0 and v1, likewise."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from harness.cluster import KafkaCluster
from harness.kafka39 import Kafka39Broker
from java_producer import TopicSpec, produce
from log_source_compare import assert_same_rows, load, rows

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.segments import PartitionLog, list_partitions
from kafka_spark.spark.log.options import parse_log_options
from kafka_spark.spark.log.planner import plan_log_batch


def _wait_checkpointed(log_dirs: list[Path], bootstrap: str, topic: str, partitions: int, copies: int) -> None:
    """Until every replica's checkpointed high watermark is the broker's (checkpoints lag a few seconds)."""
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        latest = client.latest_offsets([TopicPartition(topic, p) for p in range(partitions)])
    deadline = time.monotonic() + 30
    while True:
        hws = []
        for d in log_dirs:
            for p in list_partitions(str(d)):
                if p.topic == topic:
                    with PartitionLog.open(p.path) as plog:
                        hws.append(plog.high_watermark == latest[TopicPartition(topic, p.partition)])
        if len(hws) == partitions * copies and all(hws):
            return
        assert time.monotonic() < deadline, "high watermark checkpoints did not catch up in 30 s"
        time.sleep(0.5)


def test_three_brokers_dirs_read_each_partition_once(spark, kafka_cluster: KafkaCluster) -> None:
    topic = f"lsrc-cluster-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=3, replication=3)
    kafka_cluster.tools.produce_perf(topic, 3000, record_size=80, props={"compression.type": "snappy"})
    dirs = [n.log_dir for n in kafka_cluster.nodes]
    _wait_checkpointed(dirs, kafka_cluster.bootstrap, topic, 3, 3)
    path = f"{kafka_cluster.data_dir}/node-*/logs"
    got = assert_same_rows(spark, path, kafka_cluster.bootstrap, subscribe=topic)
    assert len(got) == 3000 and len({(r["partition"], r["offset"]) for r in got}) == 3000
    tasks = plan_log_batch(parse_log_options({"path": path, "subscribe": topic}))
    assert sorted((t.partition, t.start) for t in tasks) == sorted({(t.partition, t.start) for t in tasks})
    named = str(dirs[1])
    pinned = plan_log_batch(parse_log_options({"path": path, "subscribe": topic, "replicaLogDir": named}))
    assert {t.log_dir for t in pinned} == {named}
    assert rows(load(spark, "pykafka-log", path, "", {"subscribe": topic, "replicaLogDir": named})) == got


FORMATS = {0: "0.9.0", 1: "0.10.2"}


@pytest.fixture(scope="module")
def legacy_topics(kafka39_legacy: Kafka39Broker, producer_classes: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> str:
    run = uuid.uuid4().hex[:8]
    specs = [TopicSpec(f"lsrc39-{run}-v{magic}-{codec}", codec, {"message.format.version": fmt, "segment.ms": "100"})
             for magic, fmt in FORMATS.items() for codec in ("none", "gzip", "snappy", "lz4")]
    specs.append(TopicSpec(f"lsrc39-{run}-v1-lat", "gzip", {"message.format.version": "0.10.2",
                                                              "message.timestamp.type": "LogAppendTime"}))
    produce(producer_classes, "kafka39", kafka39_legacy.bootstrap, "plain", specs, tmp_path_factory.mktemp("sent"))
    for spec in specs:
        _wait_checkpointed([kafka39_legacy.log_dir], kafka39_legacy.bootstrap, spec.name, 1, 1)
    return f"^lsrc39-{run}-"


def test_kafka39_v0_v1_topics(spark, kafka39_legacy: Kafka39Broker, legacy_topics: str) -> None:
    got = assert_same_rows(spark, str(kafka39_legacy.log_dir), kafka39_legacy.bootstrap,
                           subscribePattern=legacy_topics)
    assert len(got) == 9 * 69
    assert {0, 1} <= {r["timestampType"] for r in got}
