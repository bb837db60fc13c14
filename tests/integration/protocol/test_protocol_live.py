"""The codec against live Kafka 4.1 (KRaft) and Kafka 3.9 (ZooKeeper mode) brokers.

Every API is spoken at the lowest and the highest version the broker and this package share, and
the cheap ones (ApiVersions, Metadata, ListOffsets, Fetch, Produce, OffsetFetch, InitProducerId)
at every version in between too. Records come from Kafka's own Java producer, and a group joined
by Kafka's own Java consumer is read back.
"""

from __future__ import annotations

import struct
import threading
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from broker_wire import CLIENT_ID, BrokerWire, Exchange, proven_range
from proof_checks import BROKER_RANGES, check, usable_range
from proof_flows import (
    EARLIEST,
    GROUP_APIS,
    LATEST,
    TopicFacts,
    create_topics,
    fetch,
    find_coordinator,
    group_lifecycle,
    init_producer_id,
    level_versions,
    list_offsets,
    metadata,
    produce_one,
    produce_with_java,
    server_context,
    topic_facts,
    topic_lifecycle,
    wait_for,
)

from kafka_spark.errors import error_class
from kafka_spark.protocol import (
    ApiKey,
    BrokerVersions,
    decode_assignment,
    decode_subscription,
    parse_api_versions_response,
    pick_version,
    supported_versions,
)
from kafka_spark.protocol.schemas import APIS

RECORDS = 7
LEVELS = ("min", "max")


@dataclass(frozen=True)
class Target:
    """One live broker, what it serves, and a topic of records written by the Java producer."""

    server: Any
    served: BrokerVersions
    ranges: dict[int, tuple[int, int]]
    topic: TopicFacts
    context: dict[str, Any]

    def wire(self) -> BrokerWire:
        return BrokerWire(self.server.bootstrap)

    def every(self, api_key: int) -> range:
        lo, hi = self.ranges[api_key]
        return range(lo, hi + 1)

    def ctx(self, **extra: Any) -> dict[str, Any]:
        return {**self.context, **extra}


@pytest.fixture(scope="module", params=["kafka", "kafka39"], ids=["kafka-4.1", "kafka-3.9"])
def target(request: pytest.FixtureRequest) -> Target:
    server = request.getfixturevalue(request.param)
    name = f"proof-records-{uuid.uuid4().hex[:8]}"
    with BrokerWire(server.bootstrap) as wire:
        served = wire.broker_versions()
        ranges = {key: proven_range(served, key) for key in APIS}
        (created,) = create_topics(wire, ranges[ApiKey.CREATE_TOPICS][1], name, 1, {}).body["topics"]
        assert created["error_code"] == 0, created
        produce_with_java(server, name, RECORDS)
        facts = topic_facts(wire, ranges[ApiKey.METADATA][1], name, RECORDS)
    context = {**server_context(server), "topic": name, "topic_id": str(facts.topic_id), "records": RECORDS}
    return Target(server, served, ranges, facts, context)


def test_broker_serves_the_pinned_ranges_and_the_codec_covers_all_of_them(target: Target) -> None:
    pinned = BROKER_RANGES[target.context["broker"]]
    assert {key: target.served.ranges[key] for key in APIS} == pinned
    for key, (lo, hi) in pinned.items():
        ours = supported_versions(key)
        assert ours[0] <= lo and hi <= ours[1], (APIS[key].name, ours, (lo, hi))
    assert target.served.negotiated() == {key: hi for key, (_, hi) in pinned.items()}


def test_api_versions_every_version(target: Target) -> None:
    with target.wire() as wire:
        for version in target.every(ApiKey.API_VERSIONS):
            check("api-versions", wire.api_versions_exchange(version).body, version, target.ctx())


def test_api_versions_newer_than_the_broker_gets_a_v0_answer_to_negotiate_from(target: Target) -> None:
    # header v2 (flexible) for an ApiVersions version no broker serves; the body never gets read
    client_id = CLIENT_ID.encode()
    payload = struct.pack(">hhih", ApiKey.API_VERSIONS, 127, 99, len(client_id)) + client_id + b"\x00\x00"
    with target.wire() as wire:
        response = wire.round_trip(struct.pack(">i", len(payload)) + payload)
    correlation_id, body = parse_api_versions_response(response, 127)
    assert correlation_id == 99 and body["error_code"] == 35
    served = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert pick_version(ApiKey.API_VERSIONS, *served[ApiKey.API_VERSIONS]) == 4


def test_metadata_every_version(target: Target) -> None:
    with target.wire() as wire:
        for version in target.every(ApiKey.METADATA):
            check("metadata", metadata(wire, version, target.topic.name).body, version, target.ctx())


def test_metadata_by_topic_id(target: Target) -> None:
    version = target.ranges[ApiKey.METADATA][1]
    with target.wire() as wire:
        body = wire.call(ApiKey.METADATA, version, {
            "topics": [{"topic_id": target.topic.topic_id, "name": None}], "allow_auto_topic_creation": False,
        })
    (topic,) = body["topics"]
    assert (topic["error_code"], topic["name"], topic["topic_id"]) == (0, target.topic.name, target.topic.topic_id)


def test_metadata_for_all_topics_includes_the_internal_offsets_topic(target: Target) -> None:
    lo, hi = target.ranges[ApiKey.METADATA]
    with target.wire() as wire:
        # a coordinator lookup makes sure the internal offsets topic exists
        find_coordinator(wire, target.ranges[ApiKey.FIND_COORDINATOR][1], "proof-offsets-topic")
        for version in (lo, hi):
            # v0 reads an empty list as "all topics"; later versions use null
            body = wire.call(ApiKey.METADATA, version, {"topics": [] if version == 0 else None})
            topics = {t["name"]: t for t in body["topics"]}
            assert target.topic.name in topics and all(t["error_code"] == 0 for t in topics.values())
            if version >= 1:
                assert topics["__consumer_offsets"]["is_internal"]


def test_list_offsets_every_version(target: Target) -> None:
    with target.wire() as wire:
        for version in target.every(ApiKey.LIST_OFFSETS):
            for label, timestamp in (("list-offsets-latest", LATEST), ("list-offsets-earliest", EARLIEST)):
                check(label, list_offsets(wire, version, target.topic.name, timestamp).body, version, target.ctx())


def test_fetch_every_version_returns_the_java_producers_batches(target: Target) -> None:
    with target.wire() as wire:
        for version in target.every(ApiKey.FETCH):
            check("fetch", fetch(wire, version, target.topic).body, version, target.ctx())


def test_fetch_from_the_high_watermark_returns_no_records(target: Target) -> None:
    lo, hi = target.ranges[ApiKey.FETCH]
    with target.wire() as wire:
        for version in (lo, hi):
            (topic,) = fetch(wire, version, target.topic, offset=RECORDS, max_wait_ms=0).body["responses"]
            (part,) = topic["partitions"]
            assert part["error_code"] == 0 and part["high_watermark"] == RECORDS
            # an empty record set: null from some brokers, zero bytes from others
            assert part["records"] is None or len(part["records"]) == 0


def _incremental_fetch(wire: BrokerWire, version: int, session_id: int, epoch: int,
                       forgotten: list[dict[str, Any]]) -> dict[str, Any]:
    return wire.call(ApiKey.FETCH, version, {
        "max_wait_ms": 0, "min_bytes": 0, "session_id": session_id, "session_epoch": epoch,
        "topics": [], "forgotten_topics_data": forgotten,
    })


def test_incremental_fetch_session_forgets_a_partition(target: Target) -> None:
    lo, hi = target.ranges[ApiKey.FETCH]
    dropped = [{"topic": target.topic.name, "topic_id": target.topic.topic_id, "partitions": [0]}]
    with target.wire() as wire:
        for version in sorted({max(lo, 7), hi}):
            # open at the end of the log, so an unchanged partition has nothing to report later
            opened = fetch(wire, version, target.topic, offset=RECORDS, max_wait_ms=0, session_epoch=0).body
            session_id = opened["session_id"]
            assert opened["error_code"] == 0 and session_id != 0
            assert opened["responses"][0]["partitions"][0]["high_watermark"] == RECORDS
            # nothing changed: the session lives on and reports no partitions
            same = _incremental_fetch(wire, version, session_id, 1, [])
            assert (same["error_code"], same["session_id"], same["responses"]) == (0, session_id, [])
            # forgetting its only partition leaves the session empty, and the broker closes it
            closed = _incremental_fetch(wire, version, session_id, 2, dropped)
            assert (closed["error_code"], closed["session_id"], closed["responses"]) == (0, 0, [])


def test_produce_every_accepted_version_then_fetch_reads_every_record(target: Target) -> None:
    lo, hi = usable_range(target.context["broker"], ApiKey.PRODUCE)
    name = f"proof-produced-{uuid.uuid4().hex[:8]}"
    with target.wire() as wire:
        create_topics(wire, target.ranges[ApiKey.CREATE_TOPICS][1], name, 1, {})
        created = topic_facts(wire, target.ranges[ApiKey.METADATA][1], name, 0,
                              served_by=target.ranges[ApiKey.LIST_OFFSETS][1])
        ctx = target.ctx(new_topic=name, new_topic_id=str(created.topic_id))
        for offset, version in enumerate(range(lo, hi + 1)):
            ex = produce_one(wire, version, created, b"key-%d" % offset, b"value from v%d" % version)
            check("produce", ex.body, version, {**ctx, "base_offset": offset})
        count = hi - lo + 1
        fetch_version = target.ranges[ApiKey.FETCH][1]
        produced = TopicFacts(name, created.topic_id, count)
        # messages v0/v1 are stored as v2 batches, one per request
        check("fetch", fetch(wire, fetch_version, produced).body, fetch_version,
              target.ctx(topic=name, topic_id=str(created.topic_id), records=count))


@pytest.mark.parametrize("version", [0, 1, 2])
def test_kafka_4_closes_the_connection_on_the_produce_versions_it_still_advertises(kafka: Any, version: int) -> None:
    topic = TopicFacts("proof-refused-produce", uuid.UUID(int=0), 0)
    with BrokerWire(kafka.bootstrap) as wire, pytest.raises(ConnectionError):
        produce_one(wire, version, topic, b"k", b"v")


@pytest.mark.parametrize("level", LEVELS)
def test_create_and_delete_topics(target: Target, level: str) -> None:
    name = f"proof-created-{level}-{uuid.uuid4().hex[:8]}"
    versions = level_versions(target.ranges, level)
    with target.wire() as wire:
        steps = topic_lifecycle(wire, versions, name, target.ranges[ApiKey.METADATA][1])
    assert [label for label, _ in steps] == ["create-topics", "delete-topics", "metadata-deleted"]
    for label, ex in steps:
        check(label, ex.body, ex.version, target.ctx(new_topic=name))
    used = {ex.api_key: ex.version for label, ex in steps if label != "metadata-deleted"}
    assert used == {key: versions[key] for key in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS)}


@pytest.mark.parametrize("level", LEVELS)
def test_create_topics_reports_an_existing_topic(target: Target, level: str) -> None:
    version = level_versions(target.ranges, level)[ApiKey.CREATE_TOPICS]
    with target.wire() as wire:
        (entry,) = create_topics(wire, version, target.topic.name, 1, {}).body["topics"]
    assert entry["name"] == target.topic.name
    assert error_class(entry["error_code"]).__name__ == "TopicAlreadyExistsError"
    if version >= 1:
        assert "already exists" in entry["error_message"]


@pytest.mark.parametrize("level", LEVELS)
def test_consumer_group_lifecycle(target: Target, level: str) -> None:
    group = f"proof-group-{level}-{uuid.uuid4().hex[:8]}"
    versions = level_versions(target.ranges, level)
    with target.wire() as wire:
        steps = group_lifecycle(wire, versions, group, target.topic.name, RECORDS)
    for label, ex in steps:
        check(label, ex.body, ex.version, target.ctx(group=group))
    used = {ex.api_key: ex.version for _, ex in steps}
    assert used == {key: versions[key] for key in GROUP_APIS}
    # KIP-394: from JoinGroup v4 a new member first gets MEMBER_ID_REQUIRED
    assert ("join-group-member-id-required" in dict(steps)) == (versions[ApiKey.JOIN_GROUP] >= 4)


def test_static_member_group_lifecycle_at_the_highest_versions(target: Target) -> None:
    group = f"proof-static-{uuid.uuid4().hex[:8]}"
    instance = f"proof-instance-{uuid.uuid4().hex[:8]}"
    versions = level_versions(target.ranges, "max")
    with target.wire() as wire:
        steps = group_lifecycle(wire, versions, group, target.topic.name, RECORDS, instance_id=instance)
    for label, ex in steps:
        check(label, ex.body, ex.version, target.ctx(group=group, instance_id=instance))
    # a static member is known by its instance id, so the broker skips the member-id round trip
    assert "join-group-member-id-required" not in dict(steps)


def test_a_java_consumers_group_decodes(target: Target) -> None:
    # the Java consumer encodes its subscription and assignment itself: an oracle for ours
    group = f"proof-java-{uuid.uuid4().hex[:8]}"
    consumer = threading.Thread(target=target.server.tools.run, args=(
        "console-consumer", "--topic", target.topic.name, "--group", group, "--from-beginning",
        "--timeout-ms", "4000"), kwargs={"check": False, "timeout": 120})
    describe_version = target.ranges[ApiKey.DESCRIBE_GROUPS][1]
    with target.wire() as wire:
        find_coordinator(wire, target.ranges[ApiKey.FIND_COORDINATOR][1], group)
        consumer.start()
        try:
            def stable() -> Exchange | None:
                ex = wire.exchange(ApiKey.DESCRIBE_GROUPS, describe_version, {"groups": [group]})
                return ex if ex.body["groups"][0]["group_state"] == "Stable" else None

            (described,) = wait_for(stable, f"the Java consumer in {group}", timeout=60).body["groups"]
        finally:
            consumer.join(timeout=120)
        offsets_version = target.ranges[ApiKey.OFFSET_FETCH][1]
        topics = [{"name": target.topic.name, "partition_indexes": [0]}]
        fetched = wire.call(ApiKey.OFFSET_FETCH, offsets_version, {"groups": [{"group_id": group, "topics": topics}]})
    assert (described["protocol_type"], described["protocol_data"]) == ("consumer", "range")
    (member,) = described["members"]
    # both Java clients write the newest layouts (v3: owned partitions, generation, rack)
    subscription_version, subscribed = decode_subscription(member["member_metadata"])
    assert subscription_version == 3
    assert (subscribed["topics"], subscribed["owned_partitions"], subscribed["generation_id"]) == (
        [target.topic.name], [], -1)
    assert subscribed["user_data"] is None and subscribed["rack_id"] is None
    assignment_version, assignment = decode_assignment(member["member_assignment"])
    assert assignment_version == 3 and assignment["user_data"] is None
    assert [(p["topic"], p["partitions"]) for p in assignment["assigned_partitions"]] == [(target.topic.name, [0])]
    # the console consumer commits what it read when it closes
    (part,) = fetched["groups"][0]["topics"][0]["partitions"]
    assert (part["error_code"], part["committed_offset"]) == (0, RECORDS)


def test_offset_fetch_every_version_including_all_partitions_of_a_group(target: Target) -> None:
    group = f"proof-simple-{uuid.uuid4().hex[:8]}"
    with target.wire() as wire:
        find_coordinator(wire, target.ranges[ApiKey.FIND_COORDINATOR][1], group)
        # a commit outside any generation, as a consumer that assigns partitions itself makes it
        commit = wire.call(ApiKey.OFFSET_COMMIT, target.ranges[ApiKey.OFFSET_COMMIT][1], {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": [{"name": target.topic.name, "partitions": [
                {"partition_index": 0, "committed_offset": 3, "committed_metadata": "simple"}]}],
        })
        assert [p["error_code"] for t in commit["topics"] for p in t["partitions"]] == [0]
        # v0 reads offsets from ZooKeeper on brokers that have it, so start at v1
        for version in range(max(1, target.ranges[ApiKey.OFFSET_FETCH][0]), target.ranges[ApiKey.OFFSET_FETCH][1] + 1):
            topics = None if version >= 2 else [{"name": target.topic.name, "partition_indexes": [0]}]
            body = wire.call(ApiKey.OFFSET_FETCH, version, {
                "group_id": group, "topics": topics, "groups": [{"group_id": group, "topics": topics}],
            })
            found = body["groups"][0]["topics"] if version >= 8 else body["topics"]
            got = [(t["name"], p["partition_index"], p["committed_offset"], p["metadata"], p["error_code"])
                   for t in found for p in t["partitions"]]
            assert got == [(target.topic.name, 0, 3, "simple", 0)], version


def test_init_producer_id_every_version(target: Target) -> None:
    with target.wire() as wire:
        for version in target.every(ApiKey.INIT_PRODUCER_ID):
            check("init-producer-id", init_producer_id(wire, version).body, version, target.ctx())
