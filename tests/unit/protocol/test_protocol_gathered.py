"""A request encoded as a gathered frame holds the bytes of the copied frame: large record sets are referenced
where they go (not copied), small ones and every other field are copied, and the size prefix counts them all; a
record set held in runs (a batch laid out in pieces) is written as their concatenation, run by run."""

from __future__ import annotations

import os

import pytest

from kafka_spark.protocol import ApiKey, GatheredFrame, decode_request, encode_request
from kafka_spark.protocol.primitives import REFERENCE_MIN, ByteRuns


def _produce(records: list[bytes | bytearray | memoryview | ByteRuns]) -> dict:
    return {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": "events", "partition_data": [{"index": i, "records": r}
                                                                   for i, r in enumerate(records)]}]}


@pytest.mark.parametrize("version", [3, 9, 11])  # before and after flexible versions
def test_a_gathered_produce_request_is_the_copied_frame(version: int) -> None:
    large = bytearray(os.urandom(REFERENCE_MIN + 17))
    records = [large, os.urandom(100), memoryview(os.urandom(3 * REFERENCE_MIN)), os.urandom(REFERENCE_MIN - 1)]
    body = _produce(records)
    copied = encode_request(ApiKey.PRODUCE, version, 7, "client", body)
    gathered = encode_request(ApiKey.PRODUCE, version, 7, "client", body, gathered=True)
    assert isinstance(gathered, GatheredFrame)
    # the two large record sets are the very buffers given, not copies
    assert [v.obj for _, v in gathered.references] == [large, records[2].obj]
    assert gathered.referenced == len(large) + 3 * REFERENCE_MIN
    assert b"".join(gathered.segments()) == bytes(copied)
    assert len(gathered) + gathered.referenced == len(copied)
    _, decoded = decode_request(memoryview(copied)[4:])
    assert [bytes(p["records"]) for p in decoded["topic_data"][0]["partition_data"]] == [bytes(r) for r in records]


def test_small_record_sets_and_other_requests_are_copied() -> None:
    frame = encode_request(ApiKey.PRODUCE, 9, 1, None, _produce([os.urandom(REFERENCE_MIN - 1)]), gathered=True)
    assert frame.references == [] and frame.segments() == [memoryview(frame)]
    metadata = encode_request(ApiKey.METADATA, 12, 2, "c", {"topics": None}, gathered=True)
    assert bytes(metadata) == bytes(encode_request(ApiKey.METADATA, 12, 2, "c", {"topics": None}))


@pytest.mark.parametrize("version", [3, 11])
def test_a_record_set_in_runs_is_written_as_their_concatenation(version: int) -> None:
    head, small, large = bytearray(os.urandom(61)), os.urandom(500), os.urandom(REFERENCE_MIN + 3)
    runs = ByteRuns([memoryview(head), memoryview(small), memoryview(large), memoryview(b"")])
    assert len(runs) == 61 + 500 + REFERENCE_MIN + 3 and bytes(runs) == bytes(head) + small + large
    whole = bytes(runs)
    for gathered in (False, True):
        frame = encode_request(ApiKey.PRODUCE, version, 7, "client", _produce([runs, b"x"]), gathered=gathered)
        copied = encode_request(ApiKey.PRODUCE, version, 7, "client", _produce([whole, b"x"]))
        assert b"".join(frame.segments()) == bytes(copied) if gathered else bytes(frame) == bytes(copied)
        if gathered:
            assert isinstance(frame, GatheredFrame) and [v.obj for _, v in frame.references] == [large]
