"""A 3-broker cluster: the leader is stopped or moved during a long fetch; exactly the produced records arrive."""

from __future__ import annotations

import subprocess

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.local.jars import classpath
from kafka_spark.local.process import java_argv

RECORDS = 60_000


def _read_with_interruption(client: KafkaClient, topic: str, interrupt) -> tuple[list[int], int]:
    reader = client.fetch(topic, 0, 0, RECORDS)
    offsets: list[int] = []
    for i, batch in enumerate(reader):
        offsets += batch.column("offset").to_pylist()
        if i == 5:
            interrupt()
    return offsets, reader.stats.retries


def _preferred_leader_election(cluster, topic: str) -> None:
    argv = java_argv(classpath("kafka4"), "org.apache.kafka.tools.LeaderElectionCommand",
                     ["--bootstrap-server", cluster.bootstrap, "--election-type", "preferred",
                      "--topic", topic, "--partition", "0"], heap="256m", short_lived=True)
    subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def test_fetch_survives_a_stopped_leader_and_a_leader_move(kafka_cluster, topic_name):
    tools = kafka_cluster.tools
    kafka_cluster.create_topic(topic_name, partitions=1, replication=3, configs={"min.insync.replicas": 2})
    tools.produce_perf(topic_name, RECORDS, record_size=100, props={"acks": "all"})
    config = {"bootstrap.servers": kafka_cluster.bootstrap, "max.partition.fetch.bytes": 32768,
              "fetch.max.bytes": 32768, "retry.backoff.max.ms": 500}
    tp = TopicPartition(topic_name, 0)
    with KafkaClient(config) as client:
        assert client.latest_offsets([tp])[tp] == RECORDS
        first_leader = client.cluster.leader(tp).leader
        node = kafka_cluster.node(first_leader)
        try:
            offsets, retries = _read_with_interruption(client, topic_name, node.stop)
            assert offsets == list(range(RECORDS))
            assert retries >= 1
            assert client.cluster.leader(tp).leader != first_leader
        finally:
            node.restart()
        # the restarted broker is the preferred leader again once an election moves leadership back
        client.cluster.metadata.invalidate()
        offsets, _ = _read_with_interruption(client, topic_name,
                                             lambda: _preferred_leader_election(kafka_cluster, topic_name))
        assert offsets == list(range(RECORDS))
