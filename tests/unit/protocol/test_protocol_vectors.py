"""Fixed byte vectors: a Metadata v0 response captured from a broker, and hand-assembled frames."""

from __future__ import annotations

import uuid
from pathlib import Path

from kafka_spark.protocol import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    response_header_version,
)

DATA = Path(__file__).parent / "data"


def _hex(name: str) -> bytes:
    return bytes.fromhex("".join((DATA / name).read_text().split()))


def test_metadata_v0_response_from_a_broker() -> None:
    # a 0.8-era broker's answer: 3 brokers on one host, topics a1..a3 with 2 partitions each
    correlation_id, body = decode_response(3, 0, _hex("metadata_v0_response.hex"))
    assert correlation_id == 0
    host = "vagrant-ubuntu-precise-64"
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == [
        (3, host, 9093), (1, host, 9091), (2, host, 9092),
    ]
    summary = {
        t["name"]: [
            (p["partition_index"], p["error_code"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in t["partitions"]
        ]
        for t in body["topics"]
    }
    assert summary == {
        "a1": [(0, 0, 3, [3], [3]), (1, 0, 1, [1], [1])],
        "a2": [(0, 0, 1, [1], [1]), (1, 0, 2, [2], [2])],
        "a3": [(0, 0, 3, [3, 1], [3, 1]), (1, 0, 1, [1, 2], [1, 2])],
    }
    assert all(t["error_code"] == 0 for t in body["topics"])
    # fields v0 does not carry come back as their defaults
    assert body["controller_id"] == -1 and body["cluster_id"] is None


def test_metadata_v0_response_re_encodes_to_the_same_bytes() -> None:
    raw = _hex("metadata_v0_response.hex")
    correlation_id, body = decode_response(3, 0, raw)
    assert encode_response(3, 0, correlation_id, body)[4:] == raw


def test_api_versions_v3_request_bytes() -> None:
    frame = encode_request(18, 3, 0x01020304, "cli", {
        "client_software_name": "ks", "client_software_version": "1.0",
    })
    expected = bytes.fromhex(
        "00120003"      # api key 18, version 3
        "01020304"      # correlation id
        "0003636c69"    # client id: classic int16-length string even in header v2
        "00"            # header tagged fields
        "03" "6b73"     # compact string "ks" (length + 1)
        "04" "312e30"   # compact string "1.0"
        "00"            # body tagged fields
    )
    assert frame == len(expected).to_bytes(4, "big") + expected
    header, body = decode_request(frame[4:])
    assert header.client_id == "cli" and body["client_software_version"] == "1.0"


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    assert response_header_version(18, 3) == 0
    assert response_header_version(3, 9) == 1
    frame = bytes.fromhex(
        "0000002a"          # correlation id 42, no header tag section
        "0000"              # error code
        "03"                # 2 api keys (compact count + 1)
        "0000" "0003" "000d" "00"
        "0012" "0000" "0004" "00"
        "00000000"          # throttle time
        "01" "01" "08" "0000000000000007"   # one tagged field: tag 1 (finalized_features_epoch), 8 bytes
    )
    correlation_id, body = decode_response(18, 3, frame)
    assert correlation_id == 42
    assert [(k["api_key"], k["min_version"], k["max_version"]) for k in body["api_keys"]] == [(0, 3, 13), (18, 0, 4)]
    assert body["finalized_features_epoch"] == 7
    assert body["supported_features"] == [] and body["zk_migration_ready"] is False


def test_fetch_v13_response_records_are_a_view_of_the_frame() -> None:
    topic_id = uuid.UUID("0123456789abcdef0123456789abcdef")
    records = bytes(range(256)) * 4
    frame = bytearray(encode_response(1, 13, 5, {
        "responses": [{"topic_id": topic_id, "partitions": [
            {"partition_index": 2, "high_watermark": 100, "records": records},
        ]}],
    })[4:])
    _, body = decode_response(1, 13, frame)
    partition = body["responses"][0]["partitions"][0]
    view = partition["records"]
    assert isinstance(view, memoryview) and view == records
    assert view.obj is frame  # a slice of the caller's buffer, not a copy
    assert body["responses"][0]["topic_id"] == topic_id
    assert partition["current_leader"] == {"leader_id": -1, "leader_epoch": -1}


def test_fetch_v4_response_bytes() -> None:
    frame = bytes.fromhex(
        "00000001"                  # correlation id
        "00000000"                  # throttle time
        "00000001" "0001" "74"      # one topic "t"
        "00000001"                  # one partition
        "00000000" "0000"           # index 0, no error
        "000000000000000a"          # high watermark 10
        "0000000000000008"          # last stable offset 8
        "ffffffff"                  # aborted transactions: null
        "00000003" "010203"         # 3 bytes of records
    )
    _, body = decode_response(1, 4, frame)
    p = body["responses"][0]["partitions"][0]
    assert (p["high_watermark"], p["last_stable_offset"], p["aborted_transactions"]) == (10, 8, None)
    assert bytes(p["records"]) == b"\x01\x02\x03"
