"""The header-only scan the fetcher uses to pipeline requests."""

from __future__ import annotations

import struct

from kafka_spark.client.fetch.batches import scan


def _v2(base: int, last_delta: int, size: int = 80) -> bytes:
    body = bytearray(size - 12)
    body[4] = 2  # magic at byte 16 of the batch
    struct.pack_into(">i", body, 23 - 12, last_delta)
    return struct.pack(">qi", base, size - 12) + bytes(body)


def _v1(offset: int, size: int = 40) -> bytes:
    body = bytearray(size - 12)
    body[4] = 1
    return struct.pack(">qi", offset, size - 12) + bytes(body)


def test_complete_v2_batches_give_the_next_offset():
    data = _v2(100, 9) + _v2(110, 0)
    assert scan(data) == (111, len(data), 0, 2)


def test_a_cut_off_batch_reports_its_full_size():
    data = _v2(0, 4) + _v2(5, 4, size=500)[:100]
    assert scan(data) == (5, 80, 500, 1)


def test_only_a_partial_batch_means_no_progress():
    assert scan(_v2(0, 4, size=2000)[:30]).next_offset is None
    assert scan(b"\0" * 5) == (None, 0, 12, 0)
    assert scan(b"") == (None, 0, 0, 0)


def test_legacy_messages_carry_their_last_offset():
    assert scan(_v1(7) + _v1(9)).next_offset == 10
