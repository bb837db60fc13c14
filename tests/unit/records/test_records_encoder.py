"""The v2 record encoder's looked-up varints against a plain reference written from the format: the same bytes for
every length, delta and header, in one record and in whole batches (producer-shaped tuples included)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_spark.records import encode_batch, iter_records
from kafka_spark.records.crc import crc32c
from kafka_spark.records.encoder import encode_record


def _varint(n: int) -> bytes:
    n = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def _field(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def reference_record(offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None, headers) -> bytes:
    body = b"\x00" + _varint(ts_delta) + _varint(offset_delta) + _field(key) + _field(value) + _varint(len(headers))
    body += b"".join(_field(k.encode()) + _field(v) for k, v in headers)
    return _varint(len(body)) + body


# lengths around the looked-up range (0..4095) and its 1/2/3-byte varint edges
blobs = st.one_of(st.none(), st.binary(max_size=70), st.integers(4090, 4100).map(lambda n: b"b" * n),
                  st.sampled_from([b"x" * 63, b"x" * 64, b"x" * 8191, b"x" * 8192, b"x" * 20000]))
deltas = st.one_of(st.integers(-5, 5000), st.integers(-(2**40), 2**40))
headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=9))), max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 5000), deltas, blobs, blobs, headers)
def test_a_record_is_the_bytes_of_the_reference(offset_delta, ts_delta, key, value, pairs):
    pairs = tuple(pairs)
    assert encode_record(offset_delta, ts_delta, key, value, pairs) == \
        reference_record(offset_delta, ts_delta, key, value, pairs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(blobs, blobs, headers, st.integers(0, 10_000)), min_size=1, max_size=30))
def test_a_batch_holds_the_reference_records_under_its_header(rows):
    base = 1_700_000_000_000
    records = [(k, v, tuple(h), base + ts) for k, v, h, ts in rows]  # the producer's plain tuples
    batch = encode_batch(records, producer_id=7, producer_epoch=1, base_sequence=3)
    first = records[0][3]  # the batch's base timestamp: deltas are relative to it
    body = b"".join(reference_record(i, r[3] - first, r[0], r[1], r[2]) for i, r in enumerate(records))
    assert batch[61:] == body
    assert struct.unpack_from(">I", batch, 17)[0] == crc32c(batch[21:])
    assert encode_batch([(k, v, list(h), ts) for k, v, h, ts in records], producer_id=7, producer_epoch=1,
                        base_sequence=3) == batch
    assert [(r.key, r.value, tuple(r.headers)) for r in iter_records(batch)] == [r[:3] for r in records]
