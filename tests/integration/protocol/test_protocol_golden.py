"""Golden vectors: real Kafka 4.1 and 3.9 responses to our requests, re-checked without a server.

The vectors come from capture_golden.py. Each one must decode, re-encode to the very same bytes,
and pass the same field checks the live tests apply; each stored request must still encode to
the bytes that were sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from golden_format import GOLDEN, from_json, load_index, read_hex, request_as_sent
from proof_checks import BROKER_RANGES, check, fetch_magic, usable_range
from record_bytes import batch_headers

from kafka_spark.protocol import (
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

INDEX = load_index()
VECTORS = INDEX["vectors"]
# APIs whose lowest and highest shared version must both have a vector, per broker
REQUIRED = (
    ApiKey.PRODUCE, ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.LIST_OFFSETS, ApiKey.FETCH, ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.LEAVE_GROUP,
    ApiKey.INIT_PRODUCER_ID,
)
SASL_BROKER = "4.1.1"


def _id(vector: dict[str, Any]) -> str:
    return f"{vector['broker']}-{vector['label']}-v{vector['version']}"


def _context(vector: dict[str, Any]) -> dict[str, Any]:
    return {**INDEX["brokers"][vector["broker"]], **from_json(vector["context"])}


per_vector = pytest.mark.parametrize("vector", VECTORS, ids=[_id(v) for v in VECTORS])


@per_vector
def test_response_decodes_and_re_encodes_to_identical_bytes(vector: dict[str, Any]) -> None:
    raw = read_hex(GOLDEN / vector["file"])
    api_key, version = vector["api_key"], vector["version"]
    correlation_id, body = decode_response(api_key, version, raw)
    assert correlation_id == vector["correlation_id"]
    assert encode_response(api_key, version, correlation_id, body) == len(raw).to_bytes(4, "big") + raw


@per_vector
def test_response_fields_are_what_the_broker_meant(vector: dict[str, Any]) -> None:
    _, body = decode_response(vector["api_key"], vector["version"], read_hex(GOLDEN / vector["file"]))
    check(vector["label"], body, vector["version"], _context(vector))


@per_vector
def test_request_still_encodes_to_the_bytes_that_were_sent(vector: dict[str, Any]) -> None:
    api_key, version = vector["api_key"], vector["version"]
    sent = bytes.fromhex(vector["request_hex"])
    request = from_json(vector["request"])
    assert encode_request(api_key, version, vector["correlation_id"], INDEX["client_id"], request) == sent
    header, decoded = decode_request(sent[4:])
    assert (header.api_key, header.api_version, header.client_id) == (api_key, version, INDEX["client_id"])
    assert request_as_sent(api_key, version, decoded) == request


@pytest.mark.parametrize("broker", sorted(BROKER_RANGES))
def test_vectors_cover_the_lowest_and_highest_shared_version_of_every_api(broker: str) -> None:
    have = {(v["api_key"], v["version"]) for v in VECTORS if v["broker"] == broker}
    apis = (*REQUIRED, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE) if broker == SASL_BROKER else REQUIRED
    for key in apis:
        for version in usable_range(broker, key):
            assert (key, version) in have, (broker, ApiKey(key).name, version)


def test_fetch_vectors_hold_every_record_format() -> None:
    # Kafka 3.9 down-converts for old Fetch versions, so one topic yields magic 0, 1 and 2 bytes
    seen: dict[int, int] = {}
    for vector in VECTORS:
        if vector["label"] != "fetch":
            continue
        _, body = decode_response(ApiKey.FETCH, vector["version"], read_hex(GOLDEN / vector["file"]))
        records = body["responses"][0]["partitions"][0]["records"]
        for header in batch_headers(records):
            assert header.magic == fetch_magic(vector["version"])
            seen[header.magic] = seen.get(header.magic, 0) + header.records
    assert set(seen) == {0, 1, 2}
