"""What Kafka and old consumers write in ZooKeeper, parsed: registrations, listeners, partition states, offsets."""

from __future__ import annotations

import json

import pytest

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.zookeeper.brokers import parse_registration
from kafka_spark.zookeeper.errors import ZooKeeperConfigError, ZooKeeperDataError
from kafka_spark.zookeeper.offsets import decode_offset, encode_offset, offset_path
from kafka_spark.zookeeper.topics import parse_assignment, parse_state

# Kafka 3.9's v5 registration (ZkData.scala) with two listeners speaking PLAINTEXT and one SASL_SSL.
V5 = json.dumps({
    "version": 5, "host": "10.0.0.1", "port": 9092, "jmx_port": -1, "timestamp": "1700000000000", "features": {},
    "endpoints": ["INTERNAL://10.0.0.1:9092", "PLAINTEXT://broker.example:9093", "SECURE://broker.example:9094"],
    "listener_security_protocol_map": {"INTERNAL": "PLAINTEXT", "PLAINTEXT": "PLAINTEXT", "SECURE": "SASL_SSL"},
    "rack": "r1",
}).encode()


def test_listener_follows_security_protocol_or_name():
    reg = parse_registration(7, V5)
    assert (reg.node_id, reg.rack, reg.version, len(reg.endpoints)) == (7, "r1", 5, 3)
    # Two PLAINTEXT listeners: the one named like the protocol wins.
    assert reg.endpoint("PLAINTEXT").address == "broker.example:9093"
    assert reg.endpoint("SASL_SSL").address == "broker.example:9094"
    assert reg.endpoint("PLAINTEXT", listener="internal").address == "10.0.0.1:9092"
    with pytest.raises(ZooKeeperDataError, match=r"no listener for security\.protocol=SSL.*SECURE \(SASL_SSL\)"):
        reg.endpoint("SSL")
    with pytest.raises(ZooKeeperDataError, match="no listener 'EXTERNAL'"):
        reg.endpoint("PLAINTEXT", listener="EXTERNAL")


def test_old_registrations():
    # v1 (0.8): host and port only; v2: endpoints named by their protocol, no map.
    v1 = parse_registration(1, b'{"jmx_port":-1,"timestamp":"1","host":"h","version":1,"port":9092}')
    assert [(e.listener, e.protocol, e.address) for e in v1.endpoints] == [("PLAINTEXT", "PLAINTEXT", "h:9092")]
    v2 = parse_registration(2, b'{"version":2,"host":null,"port":-1,"endpoints":["SSL://h:9093"]}')
    assert v2.endpoint("SSL").address == "h:9093"
    v6 = parse_registration(3, b'{"version":4,"endpoints":["PLAINTEXT://[::1]:9092"],'
                               b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}')
    assert v6.endpoint("PLAINTEXT").address == "[::1]:9092"
    for bad in (b"not json", b"[1]", b'{"endpoints":["nonsense"]}'):
        with pytest.raises(ZooKeeperDataError, match="/brokers/ids/4 is not a broker registration"):
            parse_registration(4, bad)


def test_partition_assignment_and_state():
    data = b'{"version":3,"partitions":{"1":[2,0],"0":[0,1]},"adding_replicas":{},"removing_replicas":{}}'
    assert parse_assignment("t", data) == {0: (0, 1), 1: (2, 0)}
    state = parse_state("t", 1, (2, 0), b'{"version":1,"leader":2,"leader_epoch":5,"controller_epoch":1,"isr":[2]}')
    assert (state.leader, state.leader_epoch, state.isr, state.replicas) == (2, 5, (2,), (2, 0))
    assert parse_state("t", 0, (0,), None).leader == -1
    with pytest.raises(ZooKeeperDataError, match="/brokers/topics/t has no partition assignment"):
        parse_assignment("t", b'{"version":3}')
    with pytest.raises(ZooKeeperDataError, match="partitions/0/state is not a partition state"):
        parse_state("t", 0, (0,), b'{"isr":[0]}')


def test_offsets_are_decimal_text():
    assert encode_offset(0) == b"0" and encode_offset(1234567890123) == b"1234567890123"
    assert decode_offset("/p", b"42") == 42 and decode_offset("/p", b" 42\n") == 42 and decode_offset("/p", b"-1") == -1
    with pytest.raises(ZooKeeperDataError, match="/p holds 'x1', not an offset"):
        decode_offset("/p", b"x1")
    with pytest.raises(ValueError):
        encode_offset(-1)
    tp = TopicPartition("orders", 3)
    assert offset_path("g", tp.topic, tp.partition) == "/consumers/g/offsets/orders/3"
    for group, topic in (("a/b", "t"), ("g", ""), ("..", "t")):
        with pytest.raises(ZooKeeperConfigError, match="cannot be a znode name"):
            offset_path(group, topic, 0)
