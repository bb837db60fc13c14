"""Brokers, topics and leaders read from ZooKeeper equal the Metadata API's; clients bootstrap through it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from zk_support import latest, produce

from kafka_spark.client import Cluster, KafkaClient
from kafka_spark.client.fetch.fetcher import fetch_range
from kafka_spark.local.process import free_ports
from kafka_spark.zookeeper.brokers import registered_brokers, with_discovered_bootstrap
from kafka_spark.zookeeper.errors import ZooKeeperDataError, ZooKeeperUnreachableError
from kafka_spark.zookeeper.session import ZooKeeperSession
from kafka_spark.zookeeper.settings import ZooKeeperSettings
from kafka_spark.zookeeper.topics import topic_names, topic_partitions


@pytest.mark.parametrize("broker_fixture", ["kafka39", "kafka39_legacy"])
def test_zookeeper_view_equals_the_metadata_api(request, broker_fixture, topic_name):
    broker = request.getfixturevalue(broker_fixture)
    broker.create_topic(topic_name, partitions=4)
    with KafkaClient({"bootstrap.servers": broker.bootstrap}) as client:
        md = client.metadata([topic_name])
    with ZooKeeperSession(ZooKeeperSettings(broker.zookeeper_connect)) as zk:
        brokers = registered_brokers(zk)
        parts = topic_partitions(zk, topic_name)
        names = topic_names(zk)
    assert {i: b.endpoint("PLAINTEXT").address for i, b in brokers.items()} == {
        b.node_id: b.address for b in md.brokers.values()}
    expected = {p.partition: (p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr))
                for p in md.topics[topic_name].partitions.values()}
    assert {p.partition: (p.leader, p.leader_epoch, p.replicas, p.isr) for p in parts} == expected
    assert topic_name in names


def test_a_read_through_zookeeper_equals_one_through_the_brokers(kafka39_legacy, topic_name):
    # The legacy broker lives under the chroot /legacy and stores message format v1.
    kafka39_legacy.create_topic(topic_name, partitions=3)
    produce(kafka39_legacy.bootstrap, topic_name, 90)
    ends = latest(kafka39_legacy.bootstrap, topic_name)

    def read(props):
        with Cluster(props) as cluster:
            return [b.to_pylist() for tp, end in sorted(ends.items())
                    for b in fetch_range(cluster, topic_name, tp.partition, 0, end)]

    assert read({"zookeeper.connect": kafka39_legacy.zookeeper_connect}) == read(
        {"bootstrap.servers": kafka39_legacy.bootstrap})
    props = with_discovered_bootstrap({"zookeeper.connect": kafka39_legacy.zookeeper_connect})
    assert props["bootstrap.servers"] == kafka39_legacy.bootstrap


def test_the_listener_is_chosen_by_name_or_protocol(kafka39):
    zk = kafka39.zookeeper_connect
    with KafkaClient({"zookeeper.connect": zk, "zookeeper.listener.name": "PLAINTEXT"}) as client:
        assert [b.address for b in client.metadata([]).brokers.values()] == [kafka39.bootstrap]
    with pytest.raises(ZooKeeperDataError, match=r"no listener 'EXTERNAL'.*PLAINTEXT \(PLAINTEXT\) at 127\.0\.0\.1"):
        with_discovered_bootstrap({"zookeeper.connect": zk, "zookeeper.listener.name": "EXTERNAL"})
    with pytest.raises(ZooKeeperDataError, match=r"no listener for security\.protocol=SSL"):
        with_discovered_bootstrap({"zookeeper.connect": zk, "security.protocol": "SSL"})


def test_an_unreachable_ensemble_is_one_line_naming_it_quickly():
    ports = free_ports(3)
    connect = ",".join(f"127.0.0.1:{p}" for p in ports) + "/kafka"
    started = time.monotonic()
    with pytest.raises(ZooKeeperUnreachableError) as failed, \
            Cluster({"zookeeper.connect": connect, "zookeeper.connection.timeout.ms": 1500}) as cluster:
        cluster.partitions("any")
    assert time.monotonic() - started < 10
    message = str(failed.value)
    assert "\n" not in message and connect in message and "1.5s" in message
    # The command line says the same in one line, exit code 1 (a cluster error; 2 is for settings).
    code = "import sys; from kafka_spark.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "zk", "brokers", "--zookeeper", connect,
                           "-X", "zookeeper.connection.timeout.ms=1000"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and connect in proc.stderr, proc.stderr


def test_a_broker_restarted_on_a_new_port_is_found_again(zookeeper, tmp_path, topic_name):
    from harness.kafka39 import Kafka39Broker

    broker = Kafka39Broker(zookeeper, tmp_path / "moving", broker_id=5, zk_root="/moving").start()
    try:
        broker.create_topic(topic_name, partitions=1)
        produce(broker.bootstrap, topic_name, 10, partitions=1)
        with Cluster({"zookeeper.connect": broker.zookeeper_connect}) as cluster:
            first = [r["value"] for b in fetch_range(cluster, topic_name, 0, 0, 10) for r in b.to_pylist()]
            old = broker.port
            broker.restart(new_port=True)
            assert broker.port != old
            produce(broker.bootstrap, topic_name, 5, start=10, partitions=1)
            # The same client: its known address is dead, so it asks ZooKeeper again.
            again = [r["value"] for b in fetch_range(cluster, topic_name, 0, 0, 15) for r in b.to_pylist()]
        assert again[:10] == first and again == [f"v{n}".encode() for n in range(15)]
    finally:
        broker.stop()
