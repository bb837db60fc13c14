"""The transaction APIs (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit) against byte layouts
written out by hand from the protocol guide, and the client settings that turn transactions on."""

from __future__ import annotations

import struct

import pytest

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError
from kafka_spark.protocol import ApiKey, decode_body, encode_body


def string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def compact(text: str) -> bytes:
    return bytes([len(text) + 1]) + text.encode()


def test_end_txn_v0_and_v3():
    body = {"transactional_id": "tx", "producer_id": 7, "producer_epoch": 2, "committed": True}
    assert encode_body(ApiKey.END_TXN, 0, "request", body) == string("tx") + struct.pack(">qh?", 7, 2, True)
    # v3 is flexible: compact string, then an empty tagged-field section
    assert encode_body(ApiKey.END_TXN, 3, "request", body) == compact("tx") + struct.pack(">qh?", 7, 2, True) + b"\0"
    assert decode_body(ApiKey.END_TXN, 5, "response", struct.pack(">ihqh", 0, 0, 7, 3) + b"\0") == {
        "throttle_time_ms": 0, "error_code": 0, "producer_id": 7, "producer_epoch": 3}


def test_add_partitions_to_txn_v3_and_below_carry_one_transaction():
    body = {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0,
            "topics": [{"name": "t", "partitions": [0, 2]}]}
    expected = (string("tx") + struct.pack(">qh", 1, 0) + struct.pack(">i", 1) + string("t")
                + struct.pack(">iii", 2, 0, 2))
    assert encode_body(ApiKey.ADD_PARTITIONS_TO_TXN, 2, "request", body) == expected
    response = struct.pack(">ii", 0, 1) + string("t") + struct.pack(">iih", 1, 2, 51)
    decoded = decode_body(ApiKey.ADD_PARTITIONS_TO_TXN, 2, "response", response)
    assert decoded["results_by_topic"] == [
        {"name": "t", "results_by_partition": [{"partition_index": 2, "partition_error_code": 51}]}]


def test_add_offsets_and_txn_offset_commit_v0():
    add = {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0, "group_id": "g"}
    assert encode_body(ApiKey.ADD_OFFSETS_TO_TXN, 0, "request", add) == (
        string("tx") + struct.pack(">qh", 1, 0) + string("g"))
    commit = {"transactional_id": "tx", "group_id": "g", "producer_id": 1, "producer_epoch": 0,
              "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                       "committed_metadata": None}]}]}
    assert encode_body(ApiKey.TXN_OFFSET_COMMIT, 0, "request", commit) == (
        string("tx") + string("g") + struct.pack(">qh", 1, 0) + struct.pack(">i", 1) + string("t")
        + struct.pack(">iiqh", 1, 0, 5, -1))


def test_transactional_id_turns_idempotence_on():
    config = ClientConfig({"bootstrap.servers": "h:1", "transactional.id": "tx", "transaction.timeout.ms": "5000"})
    assert (config.transactional_id, config.enable_idempotence, config.transaction_timeout_ms) == ("tx", True, 5000)
    with pytest.raises(ConfigError, match=r"transactional\.id needs enable\.idempotence=true"):
        ClientConfig({"bootstrap.servers": "h:1", "transactional.id": "tx", "enable.idempotence": "false"})
    with pytest.raises(ConfigError, match="requires acks=all"):
        ClientConfig({"bootstrap.servers": "h:1", "transactional.id": "tx", "acks": "1"})
