"""Declared version ranges, negotiation with a broker, the pre-0.10 fallback and the ApiVersions helpers."""

from __future__ import annotations

import re

import pytest

from kafka_spark.errors import BrokerError, UnsupportedVersionError
from kafka_spark.protocol import (
    ApiKey,
    BrokerVersions,
    api_versions_request,
    decode_request,
    encode_response,
    expects_response,
    is_flexible,
    parse_api_versions_response,
    pick_version,
    precompile,
    request_header_version,
    supported_versions,
)
from kafka_spark.protocol.schemas import APIS

# (min, max, first flexible version): Kafka 3.9's oldest versions up to what Kafka 4.1 serves
EXPECTED = {
    ApiKey.PRODUCE: (0, 13, 9),
    ApiKey.FETCH: (0, 18, 12),
    ApiKey.LIST_OFFSETS: (0, 10, 6),
    ApiKey.METADATA: (0, 13, 9),
    ApiKey.OFFSET_COMMIT: (0, 9, 8),
    ApiKey.OFFSET_FETCH: (0, 9, 6),
    ApiKey.FIND_COORDINATOR: (0, 6, 3),
    ApiKey.JOIN_GROUP: (0, 9, 6),
    ApiKey.HEARTBEAT: (0, 4, 4),
    ApiKey.LEAVE_GROUP: (0, 5, 4),
    ApiKey.SYNC_GROUP: (0, 5, 4),
    ApiKey.DESCRIBE_GROUPS: (0, 6, 5),
    ApiKey.LIST_GROUPS: (0, 5, 3),
    ApiKey.SASL_HANDSHAKE: (0, 1, None),
    ApiKey.API_VERSIONS: (0, 4, 3),
    ApiKey.CREATE_TOPICS: (0, 7, 5),
    ApiKey.DELETE_TOPICS: (0, 6, 4),
    ApiKey.INIT_PRODUCER_ID: (0, 5, 2),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4, 3),
    ApiKey.END_TXN: (0, 5, 3),
    ApiKey.TXN_OFFSET_COMMIT: (0, 5, 3),
    ApiKey.SASL_AUTHENTICATE: (0, 2, 2),
}

# what a Kafka 4.1 broker answers in ApiVersions for these keys
KAFKA_41 = {0: (0, 13), 1: (4, 18), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9),
            12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
            20: (1, 6), 22: (0, 5), 24: (0, 5), 25: (0, 4), 26: (0, 5), 28: (0, 5), 36: (0, 2),
            68: (0, 1)}


def test_declared_ranges() -> None:
    assert set(APIS) == set(EXPECTED)
    for key, (lo, hi, flexible) in EXPECTED.items():
        assert supported_versions(key) == (lo, hi), key.name
        first_flexible = next((v for v in range(lo, hi + 1) if is_flexible(key, v)), None)
        assert first_flexible == flexible, key.name
        assert request_header_version(key, hi) == (2 if flexible is not None else 1)


def test_field_names_are_snake_case() -> None:
    def walk(fields, where):
        for f in fields:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", f.name), f"{where}.{f.name}"
            walk(f.fields, f"{where}.{f.name}")

    for spec in APIS.values():
        walk(spec.request.fields, spec.request.name)
        walk(spec.response.fields, spec.response.name)


def test_every_plan_compiles() -> None:
    assert precompile() == 2 * sum(hi - lo + 1 for lo, hi, _ in EXPECTED.values())


def test_pick_version() -> None:
    assert pick_version(ApiKey.FETCH, 4, 18) == 18
    assert pick_version(ApiKey.FETCH, 0, 11) == 11
    assert pick_version(ApiKey.FETCH, 4, 99) == 18
    with pytest.raises(UnsupportedVersionError):
        pick_version(ApiKey.FETCH, 19, 20)
    with pytest.raises(UnsupportedVersionError):
        pick_version(99, 0, 1)


def test_broker_versions_from_a_kafka_41_answer() -> None:
    body = {"error_code": 0, "api_keys": [
        {"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in KAFKA_41.items()
    ]}
    broker = BrokerVersions.from_response(body)
    negotiated = broker.negotiated()
    assert negotiated == {k: hi for k, (_, hi) in KAFKA_41.items() if k in APIS}
    assert not broker.supports(68)  # served by the broker, not spoken by this client
    assert not broker.supports(21)
    with pytest.raises(UnsupportedVersionError):
        broker.version_for(21)


def test_broker_versions_error_code_raises() -> None:
    with pytest.raises(BrokerError) as info:
        BrokerVersions.from_response({"error_code": 35, "api_keys": []})
    assert info.value.code == 35


def test_legacy_fallback() -> None:
    broker = BrokerVersions.for_legacy_broker("0.9")
    assert broker.version_for(ApiKey.PRODUCE) == 1
    assert broker.version_for(ApiKey.FETCH) == 1
    assert broker.version_for(ApiKey.OFFSET_COMMIT) == 2
    assert broker.version_for(ApiKey.JOIN_GROUP) == 0
    assert not broker.supports(ApiKey.API_VERSIONS)
    assert not broker.supports(ApiKey.SASL_HANDSHAKE)
    old = BrokerVersions.for_legacy_broker("0.8.2")
    assert old.version_for(ApiKey.FIND_COORDINATOR) == 0 and not old.supports(ApiKey.JOIN_GROUP)
    assert not BrokerVersions.for_legacy_broker("0.8.0").supports(ApiKey.OFFSET_COMMIT)
    with pytest.raises(UnsupportedVersionError):
        BrokerVersions.for_legacy_broker("0.7")


def test_api_versions_request_and_response() -> None:
    frame = api_versions_request(3, "app")
    header, body = decode_request(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 4, 3)
    assert body["client_software_name"] == "kafka-spark" and body["client_software_version"]

    answer = {"error_code": 0, "throttle_time_ms": 0, "api_keys": [
        {"api_key": 18, "min_version": 0, "max_version": 4},
    ]}
    correlation_id, decoded = parse_api_versions_response(encode_response(18, 4, 3, answer)[4:], 4)
    assert correlation_id == 3 and BrokerVersions.from_response(decoded).version_for(18) == 4


@pytest.mark.parametrize("version", ["0.1.0+local", "1.0.0 (dev)", "+", "2.0_rc1."])
def test_software_version_is_made_acceptable_to_brokers(version: str) -> None:
    # brokers refuse the whole request (INVALID_REQUEST) when KIP-511's pattern does not match
    _, body = decode_request(api_versions_request(1, "app", software_version=version)[4:])
    sent = body["client_software_version"]
    assert re.fullmatch(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?", sent), sent


def test_api_versions_unsupported_version_answer_is_read_as_v0() -> None:
    # an older broker answers a too-new ApiVersions request with UNSUPPORTED_VERSION in v0 layout
    v0_answer = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]}
    frame = encode_response(18, 0, 9, v0_answer)[4:]
    correlation_id, body = parse_api_versions_response(frame, 4)
    assert correlation_id == 9 and body["error_code"] == 35
    (entry,) = body["api_keys"]
    assert pick_version(18, entry["min_version"], entry["max_version"]) == 2


def test_produce_acks_zero_has_no_response() -> None:
    assert not expects_response(ApiKey.PRODUCE, {"acks": 0})
    assert expects_response(ApiKey.PRODUCE, {"acks": -1})
    assert expects_response(ApiKey.PRODUCE, {})
    assert expects_response(ApiKey.FETCH, {"acks": 0})
