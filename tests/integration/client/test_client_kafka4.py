"""Metadata, offsets and groups against Kafka 4.1, with Kafka's own tools as oracles."""

from __future__ import annotations

import json
import time

import pytest

from kafka_spark.cli.main import main as cli
from kafka_spark.client import KafkaClient, TopicPartition, UnknownTopicError
from kafka_spark.client.errors import NoBrokersAvailableError, RetriesExhaustedError


@pytest.fixture
def client(kafka):
    with KafkaClient({"bootstrap.servers": f"127.0.0.1:1,{kafka.bootstrap}", "client.id": "it-client"}) as c:
        yield c


def _tool_offsets(tools, topic: str, time_spec: str) -> dict[TopicPartition, int]:
    out = tools.run("get-offsets", "--topic", topic, "--time", time_spec).stdout
    result = {}
    for line in out.split():
        name, partition, offset = line.rsplit(":", 2)
        result[TopicPartition(name, int(partition))] = int(offset) if offset else -1
    return result


def test_metadata_bootstrap_skips_dead_servers_and_reports_topic_ids(kafka, client, topic_name):
    kafka.create_topic(topic_name, partitions=3)
    md = client.metadata([topic_name])
    info = md.topics[topic_name]
    assert sorted(info.partitions) == [0, 1, 2]
    assert all(p.leader == 1 and p.leader_epoch >= 0 for p in info.partitions.values())
    assert info.topic_id.int != 0
    described = kafka.tools.run("topics", "--describe", "--topic", topic_name).stdout
    assert f"TopicId: {_kafka_uuid(info.topic_id)}" in described
    assert topic_name in client.topics(f"{topic_name[:10]}.*")
    # A search like Spark's findFirstIn: an infix matches, an anchored non-prefix does not.
    assert topic_name in client.topics(topic_name[5:15])
    assert client.topics(f"^{topic_name[5:15]}") == []
    with pytest.raises(UnknownTopicError):
        client.partitions(topic_name + "-missing")


def _kafka_uuid(u) -> str:
    import base64

    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


def test_offsets_equal_get_offset_shell(kafka, client, topic_name):
    tools = kafka.tools
    kafka.create_topic(topic_name, partitions=3)
    tools.produce_perf(topic_name, 3000, record_size=50)
    tps = client.partitions(topic_name)
    assert client.latest_offsets(tps) == _tool_offsets(tools, topic_name, "-1")
    assert client.earliest_offsets(tps) == _tool_offsets(tools, topic_name, "-2")
    # by time: every record is newer than a minute ago, none newer than the future
    minute_ago = int(time.time() * 1000) - 60_000
    # GetOffsetShell leaves out partitions without such an offset
    expected: dict[TopicPartition, int | None] = dict.fromkeys(tps)
    tool = _tool_offsets(tools, topic_name, str(minute_ago))
    expected.update({tp: (o if o >= 0 else None) for tp, o in tool.items()})
    assert client.offsets_for_times(dict.fromkeys(tps, minute_ago)) == expected
    future = dict.fromkeys(tps, int(time.time() * 1000) + 3_600_000)
    assert set(client.offsets_for_times(future).values()) == {None}


def test_offsets_cli_prints_sparks_json(kafka, topic_name, capsys):
    kafka.create_topic(topic_name, partitions=2)
    kafka.tools.console_produce(topic_name, ["a", "b", "c"])
    assert cli(["offsets", "-b", kafka.bootstrap, "--topic", topic_name, "--json"]) == 0
    latest = json.loads(capsys.readouterr().out)
    assert set(latest) == {topic_name} and sum(latest[topic_name].values()) == 3
    assert set(latest[topic_name]) == {"0", "1"}
    assert cli(["offsets", "-b", kafka.bootstrap, "--topic", topic_name, "--earliest", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {topic_name: {"0": 0, "1": 0}}
    assert cli(["metadata", "-b", kafka.bootstrap, "--topic", topic_name]) == 0
    assert f"topic {topic_name}" in capsys.readouterr().out


def test_committed_offsets_and_members_appear_in_the_consumer_groups_tool(kafka, client, topic_name, capsys):
    tools = kafka.tools
    kafka.create_topic(topic_name, partitions=4)
    plain_group, member_group = f"{topic_name}-standalone", f"{topic_name}-members"
    client.groups.commit(plain_group, {TopicPartition(topic_name, 0): 7, TopicPartition(topic_name, 3): 11})
    assert {tp: c.offset for tp, c in client.groups.committed(plain_group).items()} == {
        TopicPartition(topic_name, 0): 7, TopicPartition(topic_name, 3): 11}
    with client.group_member(member_group, [topic_name]) as member:
        assert member.assignment == client.partitions(topic_name)
        member_id = member.member_id
        member.commit({TopicPartition(topic_name, 1): 5})
        described = tools.run("consumer-groups", "--describe", "--all-groups").stdout
        desc = client.groups.describe(member_group)
        assert desc.state == "Stable" and len(desc.members) == 1
        assert {g.group_id for g in client.groups.list_groups()} >= {plain_group, member_group}
        assert cli(["groups", "describe", member_group, "-b", kafka.bootstrap, "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["state"] == "Stable" and len(shown["members"][0]["assignment"]) == 4
        assert {(o["partition"], o["committed"]) for o in shown["offsets"]} == {(1, 5)}
    rows = _group_rows(described)
    assert rows[(plain_group, 0)][0] == "7" and rows[(plain_group, 3)][0] == "11"
    assert rows[(member_group, 1)][0] == "5"
    # the member and its client id are listed for every assigned partition
    for partition in range(4):
        assert rows[(member_group, partition)][3].startswith("it-client"), rows
        assert rows[(member_group, partition)][2] == member_id
    lag = client.groups.lag(plain_group)[TopicPartition(topic_name, 3)]
    assert lag.committed == 11 and lag.lag == max(lag.end - 11, 0)
    assert client.groups.describe(member_group).state == "Empty"


def _group_rows(text: str) -> dict[tuple[str, int], list[str]]:
    rows = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 9 and cols[2].isdigit():
            # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
            rows[(cols[0], int(cols[2]))] = [cols[3], cols[5], cols[6], cols[8]]
    return rows


def test_unreachable_cluster_gives_an_explained_error():
    with KafkaClient({"bootstrap.servers": "127.0.0.1:1,127.0.0.1:2", "retries": 2, "retry.backoff.ms": 10}) as c, \
            pytest.raises(RetriesExhaustedError) as info:
        c.metadata([])
    assert isinstance(info.value.last_error, NoBrokersAvailableError)
    assert "127.0.0.1:2" in str(info.value) and "3 attempts" in str(info.value)
