"""A stream on a 3-broker cluster: a partition leader is stopped, then leadership moves back, while records
keep arriving; `pykafka` and Spark's `kafka` stream both end with exactly the records produced."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from kafka import KafkaProducer

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.local.jars import classpath
from kafka_spark.local.process import java_argv

PARTITIONS = 3


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    # acks=all with min.insync.replicas=2: every acknowledged record survives the stopped broker.
    # kafka-python's producer retries through the leader change (the producer is not under test here).
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20, linger_ms=5)
    try:
        futures = [producer.send(topic, str(n).encode(), partition=n % PARTITIONS) for n in range(start, start + count)]
        producer.flush()
        for future in futures:
            future.get(timeout=60)
    finally:
        producer.close()


def preferred_leader_election(cluster, topic: str) -> None:
    argv = java_argv(classpath("kafka4"), "org.apache.kafka.tools.LeaderElectionCommand",
                     ["--bootstrap-server", cluster.bootstrap, "--election-type", "preferred",
                      "--all-topic-partitions"], heap="256m", short_lived=True)
    subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def queries(spark, kafka_cluster, topic_name, tmp_path) -> Iterator[dict]:
    kafka_cluster.create_topic(topic_name, partitions=PARTITIONS, replication=3,
                                     configs={"min.insync.replicas": 2})
    started = {}
    for fmt in ("pykafka", "kafka"):
        name = f"cluster_{fmt}"
        started[fmt] = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
                        .option("subscribe", topic_name).option("startingOffsets", "earliest")
                        .option("maxOffsetsPerTrigger", "700").load()
                        .selectExpr("partition", "offset", "CAST(value AS STRING) AS n")
                        .writeStream.format("memory").queryName(name)
                        .option("checkpointLocation", str(tmp_path / fmt)).start())
    yield started
    for query in started.values():
        query.stop()


def test_leader_stopped_and_moved_mid_stream_keeps_the_output_exact(spark, kafka_cluster, topic_name, queries):
    bootstrap = kafka_cluster.bootstrap
    produce(bootstrap, topic_name, 0, 1500)
    for query in queries.values():
        query.processAllAvailable()
    tp = TopicPartition(topic_name, 0)
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        leader = client.cluster.leader(tp).leader
    node = kafka_cluster.node(leader)
    node.stop()
    try:
        produce(bootstrap, topic_name, 1500, 1500)
        for query in queries.values():
            query.processAllAvailable()
    finally:
        node.restart()
    preferred_leader_election(kafka_cluster, topic_name)
    produce(bootstrap, topic_name, 3000, 1500)
    for query in queries.values():
        query.processAllAvailable()
        assert query.exception() is None

    ours = sorted(tuple(r) for r in spark.table("cluster_pykafka").collect())
    theirs = sorted(tuple(r) for r in spark.table("cluster_kafka").collect())
    assert sorted(int(r[2]) for r in ours) == list(range(4500))
    assert ours == theirs
    # Several micro-batches each (700 offsets a trigger), none of them past what was produced.
    assert len([p for p in queries["pykafka"].recentProgress if p.numInputRows]) >= 7
