"""The old consumers' offset store: ZooKeeper's own shell writes and reads it, digest ACLs guard it, and a
session rides out an ensemble member going away."""

from __future__ import annotations

import json

import pytest
from zk_support import latest, produce, shell_get, shell_write_offsets

from kafka_spark.cli import main
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.zookeeper.errors import ZooKeeperAccessError
from kafka_spark.zookeeper.offsets import group_offsets, offset_path, store_offsets
from kafka_spark.zookeeper.session import ZooKeeperSession
from kafka_spark.zookeeper.settings import ZooKeeperSettings


def test_shell_written_offsets_are_read_and_ours_read_back_byte_for_byte(zookeeper, topic_name):
    group = f"old-{topic_name}"
    written = {TopicPartition(topic_name, 0): 17, TopicPartition(topic_name, 1): 0,
               TopicPartition(topic_name, 2): 123456789012}
    shell_write_offsets(zookeeper.connect, group, written)
    settings = ZooKeeperSettings(zookeeper.connect)
    with ZooKeeperSession(settings) as zk:
        assert group_offsets(zk, group) == written
        assert group_offsets(zk, group, ["no-such-topic"]) == {}
        moved = {tp: off + 5 for tp, off in written.items()} | {TopicPartition(topic_name, 3): 9}
        store_offsets(zk, group, moved)
        assert zk.get(offset_path(group, topic_name, 2)) == b"123456789017"
    expected = {offset_path(group, tp.topic, tp.partition): str(off) for tp, off in moved.items()}
    assert shell_get(zookeeper.connect, sorted(expected)) == expected


def test_digest_acls_on_the_offsets_path(zookeeper, topic_name):
    group, secret = f"acl-{topic_name}", "pw-never-shown"
    tp = TopicPartition(topic_name, 0)
    shell_write_offsets(zookeeper.connect, group, {tp: 40}, auth=f"loader:{secret}", acl=True)
    with ZooKeeperSession(ZooKeeperSettings(zookeeper.connect)) as zk, \
            pytest.raises(ZooKeeperAccessError, match="ACL does not allow this session to list") as refused:
        group_offsets(zk, group)
    assert "\n" not in str(refused.value)
    wrong = ZooKeeperSettings(zookeeper.connect, digest=f"loader:{secret}-wrong")
    with ZooKeeperSession(wrong) as zk, pytest.raises(ZooKeeperAccessError) as refused:
        store_offsets(zk, group, {tp: 41})
    assert secret not in str(refused.value)
    with ZooKeeperSession(ZooKeeperSettings(zookeeper.connect, digest=f"loader:{secret}")) as zk:
        assert group_offsets(zk, group) == {tp: 40}
        store_offsets(zk, group, {tp: 41, TopicPartition(topic_name, 1): 7})
    # What we create is the loader's to write and everyone's to read, as Kafka's secure ACLs.
    assert shell_get(zookeeper.connect, [offset_path(group, topic_name, 1)]) == {offset_path(group, topic_name, 1): "7"}
    assert shell_get(zookeeper.connect, [offset_path(group, topic_name, 0)], auth=f"loader:{secret}") == {
        offset_path(group, topic_name, 0): "41"}


def test_a_session_survives_an_ensemble_member_going_away(ensemble, topic_name):
    settings = ZooKeeperSettings(ensemble.connect, connection_timeout_ms=30000)
    tp = TopicPartition(topic_name, 0)
    with ZooKeeperSession(settings) as zk:
        store_offsets(zk, "survivor", {tp: 1})
        # Every member in turn, the session connected to it included: two of three keep the quorum.
        for node in ensemble.nodes:
            node.stop()
            try:
                store_offsets(zk, "survivor", {tp: group_offsets(zk, "survivor")[tp] + 1})
            finally:
                node.start()
        assert group_offsets(zk, "survivor") == {tp: 4}


def test_zk_commands(kafka39, topic_name, capsys):
    kafka39.create_topic(topic_name, partitions=2)
    produce(kafka39.bootstrap, topic_name, 20, partitions=2)
    group = f"cli-{topic_name}"
    shell_write_offsets(kafka39.zookeeper_connect, group, {TopicPartition(topic_name, 0): 4})

    def run(*args: str) -> dict:
        assert main(["zk", *args, "--zookeeper", kafka39.zookeeper_connect, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    brokers = run("brokers")["brokers"]
    assert [(b["id"], b["client_address"]) for b in brokers] == [(0, kafka39.bootstrap)]
    topics = run("topics", "--topic", topic_name)["topics"]
    assert [(p["partition"], p["leader"], p["isr"]) for p in topics[0]["partitions"]] == [(0, 0, [0]), (1, 0, [0])]
    assert group in run("groups")["groups"]
    assert run("offsets", group)["offsets"] == [{"topic": topic_name, "partition": 0, "offset": 4}]
    lag = run("lag", group)
    end = latest(kafka39.bootstrap, topic_name)[TopicPartition(topic_name, 0)]
    assert lag["partitions"] == [{"topic": topic_name, "partition": 0, "offset": 4, "end": end, "lag": end - 4}]
    assert lag["total_lag"] == end - 4
    # Text output, and --zookeeper on the other commands.
    assert main(["zk", "lag", group, "--zookeeper", kafka39.zookeeper_connect]) == 0
    assert f"total lag {end - 4}" in capsys.readouterr().out
    assert main(["offsets", "--zookeeper", kafka39.zookeeper_connect, "--topic", topic_name, "--json"]) == 0
    assert str(end) in capsys.readouterr().out


def test_a_session_the_server_expires_is_replaced_and_the_write_goes_through(zookeeper, topic_name):
    from kazoo.client import KazooClient

    settings = ZooKeeperSettings(zookeeper.connect, connection_timeout_ms=20000)
    tp = TopicPartition(topic_name, 0)
    with ZooKeeperSession(settings) as zk:
        store_offsets(zk, "expiring", {tp: 1})
        first = zk._client.client_id
        # The server ends a session when any client closes it by its id and password: an expiry on demand.
        twin = KazooClient(hosts=zookeeper.connect, client_id=first)
        twin.start(timeout=10)
        twin.stop()
        twin.close()
        store_offsets(zk, "expiring", {tp: 2})
        assert group_offsets(zk, "expiring") == {tp: 2}
        assert zk._client.client_id[0] != first[0]
