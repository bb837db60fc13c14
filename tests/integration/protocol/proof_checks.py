"""What a correct decoded response looks like, per labelled exchange; shared by live and golden tests.

Each check takes the decoded body, the version it was decoded with and a context mapping
(broker version, broker id and port, the records topic and its id, names used by the flow).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from broker_wire import CLIENT_ID
from record_bytes import batch_headers

from kafka_spark.errors import error_class
from kafka_spark.protocol import UNKNOWN_TAGS, ApiKey, decode_assignment, decode_subscription, supported_versions

# What each pinned broker release answers to ApiVersions, for the APIs this package speaks.
BROKER_RANGES: dict[str, dict[int, tuple[int, int]]] = {
    "4.1.1": {
        ApiKey.PRODUCE: (0, 13), ApiKey.FETCH: (4, 18), ApiKey.LIST_OFFSETS: (1, 10), ApiKey.METADATA: (0, 13),
        ApiKey.OFFSET_COMMIT: (2, 9), ApiKey.OFFSET_FETCH: (1, 9), ApiKey.FIND_COORDINATOR: (0, 6),
        ApiKey.JOIN_GROUP: (0, 9), ApiKey.HEARTBEAT: (0, 4), ApiKey.LEAVE_GROUP: (0, 5), ApiKey.SYNC_GROUP: (0, 5),
        ApiKey.DESCRIBE_GROUPS: (0, 6), ApiKey.LIST_GROUPS: (0, 5), ApiKey.SASL_HANDSHAKE: (0, 1),
        ApiKey.API_VERSIONS: (0, 4), ApiKey.CREATE_TOPICS: (2, 7), ApiKey.DELETE_TOPICS: (1, 6),
        ApiKey.INIT_PRODUCER_ID: (0, 5), ApiKey.SASL_AUTHENTICATE: (0, 2), ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
        ApiKey.ADD_OFFSETS_TO_TXN: (0, 4), ApiKey.END_TXN: (0, 5), ApiKey.TXN_OFFSET_COMMIT: (0, 5),
    },
    "3.9.1": {
        ApiKey.PRODUCE: (0, 11), ApiKey.FETCH: (0, 17), ApiKey.LIST_OFFSETS: (0, 9), ApiKey.METADATA: (0, 12),
        ApiKey.OFFSET_COMMIT: (0, 9), ApiKey.OFFSET_FETCH: (0, 9), ApiKey.FIND_COORDINATOR: (0, 6),
        ApiKey.JOIN_GROUP: (0, 9), ApiKey.HEARTBEAT: (0, 4), ApiKey.LEAVE_GROUP: (0, 5), ApiKey.SYNC_GROUP: (0, 5),
        ApiKey.DESCRIBE_GROUPS: (0, 5), ApiKey.LIST_GROUPS: (0, 5), ApiKey.SASL_HANDSHAKE: (0, 1),
        ApiKey.API_VERSIONS: (0, 4), ApiKey.CREATE_TOPICS: (0, 7), ApiKey.DELETE_TOPICS: (0, 6),
        ApiKey.INIT_PRODUCER_ID: (0, 5), ApiKey.SASL_AUTHENTICATE: (0, 2), ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
        ApiKey.ADD_OFFSETS_TO_TXN: (0, 4), ApiKey.END_TXN: (0, 4), ApiKey.TXN_OFFSET_COMMIT: (0, 4),
    },
}
# versions a broker advertises but refuses: Kafka 4.x still lists Produce v0-2, which KIP-896
# removed, and closes the connection when they are used
ACCEPTED_FROM: dict[tuple[str, int], int] = {("4.1.1", ApiKey.PRODUCE): 3}
HOST = "127.0.0.1"
SASL_MECHANISMS = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
KRAFT_FEATURE = "metadata.version"

# labels whose answer carries a deliberate error, and the exception class that code maps to
EXPECTED_ERRORS: dict[str, tuple[int, str]] = {
    "join-group-member-id-required": (79, "MemberIdRequiredError"),
    "metadata-deleted": (3, "UnknownTopicOrPartitionError"),
    "sasl-handshake-unsupported": (33, "UnsupportedSaslMechanismError"),
    "sasl-authenticate-wrong-password": (58, "SaslAuthenticationFailedError"),
}


def usable_range(broker: str, api_key: int) -> tuple[int, int]:
    """The versions of `api_key` that `broker` both advertises and accepts, within what this package speaks."""
    lo, hi = BROKER_RANGES[broker][api_key]
    ours = supported_versions(api_key)
    return max(lo, ours[0], ACCEPTED_FROM.get((broker, api_key), 0)), min(hi, ours[1])


def fetch_magic(version: int) -> int:
    """The record format a broker sends for a Fetch version: older clients get down-converted data."""
    if version <= 1:
        return 0
    return 1 if version <= 3 else 2


def found_under(value: Any, key: str) -> Iterator[Any]:
    """Every value stored under `key` anywhere in a decoded body."""
    if isinstance(value, Mapping):
        for name, item in value.items():
            if name == key:
                yield item
            else:
                yield from found_under(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from found_under(item, key)


def _broker_shape(entry: Mapping[str, Any], ctx: Mapping[str, Any]) -> None:
    got = (entry["node_id"], entry["host"], entry["port"])
    assert got == (ctx["broker_id"], HOST, ctx["port"]), got


def check_api_versions(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    served = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    ours = {k: served[k] for k in BROKER_RANGES[ctx["broker"]]}
    assert ours == BROKER_RANGES[ctx["broker"]]
    # a broker serves far more APIs than a consumer needs; the list must decode whole
    assert len(served) > 40 and len(served) == len(body["api_keys"])
    if version >= 3 and ctx["broker"].startswith("4."):
        assert KRAFT_FEATURE in {f["name"] for f in body["supported_features"]}
        assert KRAFT_FEATURE in {f["name"] for f in body["finalized_features"]}
        assert body["finalized_features_epoch"] >= 0


def check_metadata(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    (broker,) = body["brokers"]
    _broker_shape(broker, ctx)
    assert broker["rack"] is None
    if version >= 1:
        assert body["controller_id"] == ctx["broker_id"]
    if version >= 2:
        assert isinstance(body["cluster_id"], str) and len(body["cluster_id"]) == 22
    (topic,) = body["topics"]
    assert topic["name"] == ctx["topic"] and not topic["is_internal"]
    if version >= 10:
        assert str(topic["topic_id"]) == ctx["topic_id"]
    (part,) = topic["partitions"]
    broker_id = ctx["broker_id"]
    assert (part["partition_index"], part["leader_id"], part["replica_nodes"], part["isr_nodes"]) == (
        0, broker_id, [broker_id], [broker_id])
    if version >= 7:
        assert part["leader_epoch"] >= 0


def check_metadata_deleted(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    (topic,) = body["topics"]
    assert topic["name"] == ctx["new_topic"] and topic["partitions"] == []


def _list_offsets_check(expected: Callable[[Mapping[str, Any]], int]) -> Callable[..., None]:
    def check(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
        (topic,) = body["topics"]
        assert topic["name"] == ctx["topic"]
        (part,) = topic["partitions"]
        assert part["partition_index"] == 0
        offset = part["old_style_offsets"] if version == 0 else [part["offset"]]
        assert offset == [expected(ctx)]
        if version >= 4:
            assert part["leader_epoch"] >= 0

    return check


def check_fetch(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    if version >= 7:
        assert body["session_id"] == 0  # a sessionless full fetch
    (topic,) = body["responses"]
    if version >= 13:
        assert str(topic["topic_id"]) == ctx["topic_id"]
    else:
        assert topic["topic"] == ctx["topic"]
    (part,) = topic["partitions"]
    assert part["partition_index"] == 0 and part["high_watermark"] == ctx["records"]
    if version >= 4:
        assert part["last_stable_offset"] == ctx["records"]
        assert not part["aborted_transactions"]
    if version >= 5:
        assert part["log_start_offset"] == 0
    records = part["records"]
    assert isinstance(records, (bytes, memoryview)) and len(records) > 0
    headers = batch_headers(records)
    consumed = sum(12 + h.size for h in headers)
    # the broker sent only whole batches here (the partition holds far less than the byte limits)
    assert consumed == len(records), (consumed, len(records))
    assert {h.magic for h in headers} == {fetch_magic(version)}
    assert all(h.crc_ok and h.compression == 0 for h in headers)
    assert headers[0].base_offset == 0
    assert sum(h.records for h in headers) == ctx["records"]


def check_produce(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    (topic,) = body["responses"]
    if version >= 13:
        assert str(topic["topic_id"]) == ctx["new_topic_id"]
    else:
        assert topic["name"] == ctx["new_topic"]
    (part,) = topic["partition_responses"]
    assert (part["index"], part["base_offset"]) == (0, ctx["base_offset"])
    if version >= 2:
        assert part["log_append_time_ms"] == -1  # the topic keeps the producer's CreateTime
    if version >= 5:
        assert part["log_start_offset"] == 0
    if version >= 8:
        assert part["record_errors"] == [] and part["error_message"] is None


def check_create_topics(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    (topic,) = body["topics"]
    assert topic["name"] == ctx["new_topic"]
    if version >= 1:
        assert not topic["error_message"]
    if version >= 5:
        assert (topic["num_partitions"], topic["replication_factor"]) == (2, 1)
        configs = {c["name"]: c["value"] for c in topic["configs"]}
        assert configs["retention.ms"] == "3600000" and "cleanup.policy" in configs
    if version >= 7:
        assert topic["topic_id"].int != 0


def check_delete_topics(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    (entry,) = body["responses"]
    assert entry["name"] == ctx["new_topic"]
    if version >= 6:
        assert entry["topic_id"].int != 0


def check_find_coordinator(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    if version >= 4:
        (coordinator,) = body["coordinators"]
        assert coordinator["key"] == ctx["group"]
        _broker_shape(coordinator, ctx)
    else:
        _broker_shape(body, ctx)


def _member_id(value: str, ctx: Mapping[str, Any]) -> None:
    # the broker names members "<client id>-<uuid>", static members "<instance id>-<uuid>"
    prefix = ctx.get("instance_id") or CLIENT_ID
    assert value.startswith(prefix + "-") and len(value) == len(prefix) + 37, value


def _subscribed_topics(metadata: Any) -> list[str]:
    return decode_subscription(metadata)[1]["topics"]


def _assigned(assignment: Any) -> list[tuple[str, list[int]]]:
    return [(p["topic"], p["partitions"]) for p in decode_assignment(assignment)[1]["assigned_partitions"]]


def check_join_member_id_required(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    _member_id(body["member_id"], ctx)
    assert body["generation_id"] == -1 and body["members"] == []


def check_join_group(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    _member_id(body["member_id"], ctx)
    assert body["generation_id"] >= 1 and body["leader"] == body["member_id"]
    assert body["protocol_name"] == "range"
    if version >= 7:
        assert body["protocol_type"] == "consumer"
    (member,) = body["members"]
    assert member["member_id"] == body["member_id"]
    if version >= 5:
        assert member["group_instance_id"] == ctx.get("instance_id")
    assert _subscribed_topics(member["metadata"]) == [ctx["topic"]]


def check_sync_group(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    assert _assigned(body["assignment"]) == [(ctx["topic"], [0])]
    if version >= 5:
        assert (body["protocol_type"], body["protocol_name"]) == ("consumer", "range")


def check_heartbeat(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    assert set(body) == {"throttle_time_ms", "error_code"}


def check_offset_commit(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    summary = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in body["topics"]]
    assert summary == [(ctx["topic"], [0])]


def check_offset_fetch(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    if version >= 8:
        (group,) = body["groups"]
        assert group["group_id"] == ctx["group"]
        topics = group["topics"]
    else:
        topics = body["topics"]
    (topic,) = topics
    (part,) = topic["partitions"]
    assert (topic["name"], part["partition_index"], part["committed_offset"]) == (ctx["topic"], 0, ctx["records"])
    # v0 commits live in ZooKeeper on brokers that still have it, which keeps no metadata string
    zookeeper_v0 = version == 0 and ctx["broker"].startswith("3.")
    assert part["metadata"] == ("" if zookeeper_v0 else "proof")


def check_describe_groups(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    (group,) = body["groups"]
    assert (group["group_id"], group["group_state"], group["protocol_type"], group["protocol_data"]) == (
        ctx["group"], "Stable", "consumer", "range")
    (member,) = group["members"]
    _member_id(member["member_id"], ctx)
    if version >= 4:
        assert member["group_instance_id"] == ctx.get("instance_id")
    assert (member["client_id"], member["client_host"]) == (CLIENT_ID, "/" + HOST)
    assert _subscribed_topics(member["member_metadata"]) == [ctx["topic"]]
    assert _assigned(member["member_assignment"]) == [(ctx["topic"], [0])]


def check_list_groups(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    groups = {g["group_id"]: g for g in body["groups"]}
    ours = groups[ctx["group"]]
    assert ours["protocol_type"] == "consumer"
    if version >= 4:
        assert ours["group_state"] == "Stable"
    if version >= 5:
        assert ours["group_type"] == "classic"


def check_leave_group(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    if version >= 3:
        (member,) = body["members"]
        _member_id(member["member_id"], ctx)
        assert member["group_instance_id"] == ctx.get("instance_id")


def check_init_producer_id(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    assert body["producer_id"] >= 0 and body["producer_epoch"] >= 0


def check_sasl_handshake(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    mechanisms = body["mechanisms"]
    assert set(mechanisms) == SASL_MECHANISMS and len(mechanisms) == len(SASL_MECHANISMS)


def check_sasl_authenticate(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    assert not body["error_message"] and bytes(body["auth_bytes"]) == b""
    if version >= 1:
        # 0 unless the broker sets connections.max.reauth.ms
        assert body["session_lifetime_ms"] == 0


def check_sasl_authenticate_refused(body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    message = body["error_message"]
    assert "Authentication failed" in message and ctx["password"] not in message


CHECKS: dict[str, Callable[[dict, int, Mapping[str, Any]], None]] = {
    "api-versions": check_api_versions,
    "metadata": check_metadata,
    "metadata-deleted": check_metadata_deleted,
    "list-offsets-latest": _list_offsets_check(lambda ctx: ctx["records"]),
    "list-offsets-earliest": _list_offsets_check(lambda ctx: 0),
    "fetch": check_fetch,
    "produce": check_produce,
    "create-topics": check_create_topics,
    "delete-topics": check_delete_topics,
    "find-coordinator": check_find_coordinator,
    "join-group-member-id-required": check_join_member_id_required,
    "join-group": check_join_group,
    "sync-group": check_sync_group,
    "heartbeat": check_heartbeat,
    "offset-commit": check_offset_commit,
    "offset-fetch": check_offset_fetch,
    "describe-groups": check_describe_groups,
    "list-groups": check_list_groups,
    "leave-group": check_leave_group,
    "init-producer-id": check_init_producer_id,
    "sasl-handshake": check_sasl_handshake,
    "sasl-handshake-unsupported": check_sasl_handshake,
    "sasl-authenticate": check_sasl_authenticate,
    "sasl-authenticate-wrong-password": check_sasl_authenticate_refused,
}


def check(label: str, body: dict, version: int, ctx: Mapping[str, Any]) -> None:
    """Judge one decoded response: its error codes, then the fields that matter for `label`."""
    # a tagged field the schemas do not declare would mean a declaration is missing or misplaced
    assert not list(found_under(body, UNKNOWN_TAGS))
    codes = list(found_under(body, "error_code"))
    if label in EXPECTED_ERRORS:
        code, name = EXPECTED_ERRORS[label]
        assert code in codes and set(codes) <= {0, code}, codes
        assert error_class(code).__name__ == name
    else:
        assert set(codes) <= {0}, [error_class(c).__name__ for c in codes if c]
    if "throttle_time_ms" in body:
        assert body["throttle_time_ms"] == 0
    CHECKS[label](body, version, ctx)
