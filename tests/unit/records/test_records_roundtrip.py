"""Our encoder → our decoders, for every format and codec, including the awkward records."""

from __future__ import annotations

import pytest
from records_support import arrow_rows, record_rows, strip_headers

from kafka_spark.records import (
    Compression,
    RecordData,
    TimestampType,
    decode_to_arrow,
    encode_batch,
    iter_records,
    scan_batches,
)

CODECS = [("none", True), ("gzip", True), ("snappy", True), ("snappy", False), ("lz4", True), ("zstd", True)]
FORMATS = [(m, codec, xerial) for m in (0, 1, 2) for codec, xerial in CODECS if not (m < 2 and codec == "zstd")]
TS = 1_700_000_000_000


def sample(magic: int) -> list[RecordData]:
    headers = magic == 2
    return [
        RecordData(b"k0", b"v0", [("h1", b"x"), ("empty", b""), ("null", None)] if headers else (), TS),
        RecordData(None, b"null key", (), TS + 5),
        RecordData(b"null value", None, (), TS - 3),
        RecordData(None, None, (), TS),
        RecordData(b"", b"", [("ключ", b"\x00\xff")] if headers else (), TS + 1),
        RecordData(b"k" * 300, bytes(range(256)) * 80, (), TS + 100_000),  # 20 KB: three-byte lengths
        RecordData(b"big", b"\xab" * 300_000, [("h", b"y" * 9000)] if headers else (), TS + 7),
    ]


def expected(records: list[RecordData], magic: int, base: int) -> list[tuple]:
    out = []
    for i, r in enumerate(records):
        ts, tt = (-1, -1) if magic == 0 else (r.timestamp, 0)
        out.append((base + i, ts * 1000, tt, r.key, r.value, tuple(r.headers) or None))
    return out


@pytest.mark.parametrize(("magic", "codec", "xerial"), FORMATS)
def test_round_trip(magic: int, codec: str, xerial: bool, vectorised_only: None) -> None:
    records = sample(magic)
    buf = encode_batch(records, magic=magic, compression=codec, base_offset=1000, xerial_snappy=xerial)
    want = expected(records, magic, 1000)
    assert record_rows(iter_records(buf)) == want
    result = decode_to_arrow(buf, "t", 7, include_headers=True)
    assert arrow_rows(result.batch) == want
    assert result.batch.column("topic").to_pylist() == ["t"] * len(records)
    assert result.batch.column("partition").to_pylist() == [7] * len(records)
    assert result.next_offset == 1000 + len(records)
    assert result.incomplete_at is None
    assert result.end == len(buf)
    without = decode_to_arrow(buf, "t", 7)
    assert without.batch.schema.names[-1] == "timestampType"
    assert arrow_rows(without.batch) == strip_headers(want)


@pytest.mark.parametrize(("magic", "codec", "xerial"), FORMATS)
def test_many_batches_and_gaps(magic: int, codec: str, xerial: bool, vectorised_only: None) -> None:
    buf = b""
    want = []
    for b in range(30):
        n = 1 + (b * 7) % 90
        deltas = [2 * i for i in range(n)]  # compaction leaves holes
        records = [(f"k{b}-{i}".encode(), f"value {b} {i}".encode() * (i % 5), (), TS + i) for i in range(n)]
        base = 10_000 + 1000 * b
        buf += encode_batch(records, magic=magic, compression=codec, base_offset=base, offset_deltas=deltas,
                            xerial_snappy=xerial)
        ts_type = -1 if magic == 0 else 0
        want += [(base + d, (-1 if magic == 0 else TS + i) * 1000, ts_type, r[0], r[1], None)
                 for i, (d, r) in enumerate(zip(deltas, records, strict=True))]
    assert record_rows(iter_records(buf), headers=False) == want
    result = decode_to_arrow(buf, "t", 0)
    assert arrow_rows(result.batch) == want
    # An uncompressed v0/v1 message is an entry of its own; otherwise one entry per batch.
    assert result.batches == (len(want) if magic < 2 and codec == "none" else 30)


def test_mixed_formats_in_one_buffer(vectorised_only: None) -> None:
    # After a message-format upgrade a log holds v0, then v1, then v2 entries.
    parts = [
        encode_batch([(b"a", b"1", (), TS)], magic=0, base_offset=0),
        encode_batch([(b"b", b"2", (), TS), (b"c", b"3", (), TS + 1)], magic=1, base_offset=1, compression="gzip"),
        encode_batch([(b"d", b"4", (), TS + 2)], magic=1, base_offset=3),
        encode_batch([(b"e", b"5", [("x", b"y")], TS + 3)], magic=2, base_offset=4, compression="lz4"),
        encode_batch([(b"f", b"6", (), TS + 4)], magic=2, base_offset=5),
    ]
    buf = b"".join(parts)
    rows = arrow_rows(decode_to_arrow(buf, "t", 0, include_headers=True).batch)
    assert [r[0] for r in rows] == [0, 1, 2, 3, 4, 5]
    assert [r[3] for r in rows] == [b"a", b"b", b"c", b"d", b"e", b"f"]
    assert [r[2] for r in rows] == [-1, 0, 0, 0, 0, 0]
    assert rows[4][5] == (("x", b"y"),)
    assert rows == record_rows(iter_records(buf))
    for compressed_first in (True, False):
        order = parts if compressed_first else parts[::-1]
        assert len(decode_to_arrow(b"".join(order), "t", 0).batch) == 6


def test_log_append_time() -> None:
    records = [(b"a", b"1", (), TS), (b"b", b"2", (), TS + 50)]
    for magic, codec in [(1, "none"), (1, "gzip"), (2, "none"), (2, "zstd")]:
        buf = encode_batch(records, magic=magic, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                           log_append_time=TS + 999)
        got = record_rows(iter_records(buf), headers=False)
        assert [(r[1], r[2]) for r in got] == [((TS + 999) * 1000, 1)] * 2, (magic, codec)
        assert arrow_rows(decode_to_arrow(buf, "t", 0).batch) == got


def test_producer_fields_and_sequences() -> None:
    buf = encode_batch([(None, b"x", (), TS)] * 3, producer_id=42, producer_epoch=3, base_sequence=2**31 - 2,
                       transactional=True, partition_leader_epoch=9, base_offset=77)
    (info,) = scan_batches(buf).batches
    producer = (info.producer_id, info.producer_epoch, info.base_sequence, info.partition_leader_epoch)
    assert producer == (42, 3, 2**31 - 2, 9)
    assert info.is_transactional and not info.is_control
    assert (info.base_offset, info.last_offset, info.count, info.next_offset) == (77, 79, 3, 80)
    assert info.last_sequence == 0  # sequences wrap after INT32_MAX, as in Kafka
    assert [r.sequence for r in iter_records(buf)] == [2**31 - 2, 2**31 - 1, 0]
    assert info.compression == Compression.NONE


def test_empty_batch_still_advances_the_offset() -> None:
    # The log cleaner keeps empty batches to preserve producer state.
    buf = encode_batch([], base_offset=50, last_offset_delta=4, producer_id=1, producer_epoch=0, base_sequence=0)
    result = decode_to_arrow(buf, "t", 0)
    assert result.batch.num_rows == 0
    assert result.next_offset == 55
    assert list(iter_records(buf)) == []


def test_many_headers_and_lanes(vectorised_only: None) -> None:
    # One record with hundreds of headers (finished one by one), many with a few (vectorised).
    heavy = [(f"h{i}", None if i % 3 == 0 else bytes([i % 256]) * (i % 7)) for i in range(700)]
    records = [(None, b"v", heavy if i == 5 else [("a", b"b")] * (i % 4), TS) for i in range(200)]
    buf = encode_batch(records)
    want = record_rows(iter_records(buf))
    assert arrow_rows(decode_to_arrow(buf, "t", 0, include_headers=True).batch) == want
    assert want[5][5] == tuple(heavy)


@pytest.mark.parametrize("lanes", [1, 31, 32, 33, 200])
def test_walk_lane_counts(lanes: int, vectorised_only: None) -> None:
    # Batches of different record counts exercise both the numpy lanes and the Python tail.
    buf = b"".join(
        encode_batch([(None, b"x" * ((i * 37 + b) % 9000), (), TS + i) for i in range(1 + (b * 13) % 150)],
                     base_offset=b * 1000)
        for b in range(lanes)
    )
    assert arrow_rows(decode_to_arrow(buf, "t", 0).batch) == record_rows(iter_records(buf), headers=False)


@pytest.mark.parametrize("lanes", [1, 5, 60])
@pytest.mark.parametrize("pattern", ["fixed", "runs", "fixed-then-random"])
def test_walk_with_repeating_lengths(lanes: int, pattern: str, vectorised_only: None) -> None:
    # Equal-length records are walked by confirmed runs; anything else falls back to steps.
    def size(b: int, i: int) -> int:
        if pattern == "fixed":
            return 100
        if pattern == "runs":
            return 50 + 10 * (i // 37)
        return 100 if i < 150 else (i * 7919 + b) % 300

    buf = b"".join(
        encode_batch([(None, b"v" * size(b, i), (), TS) for i in range(300 + b)], base_offset=b * 1000)
        for b in range(lanes)
    )
    for data in (buf, buf[:-1]):  # also with the last batch cut short
        assert arrow_rows(decode_to_arrow(data, "t", 0).batch) == record_rows(iter_records(data), headers=False)


def test_timestamp_extremes(vectorised_only: None) -> None:
    records = [(None, b"a", (), -(2**61)), (None, b"b", (), 2**61), (None, b"c", (), 0)]
    buf = encode_batch(records)
    got = arrow_rows(decode_to_arrow(buf, "t", 0).batch)
    # Milliseconds that overflow microseconds become null, the rest convert exactly.
    assert [r[1] for r in got] == [None, None, 0]
    assert [r.timestamp for r in iter_records(buf)] == [-(2**61), 2**61, 0]


def test_inputs_of_every_buffer_type(vectorised_only: None) -> None:
    buf = encode_batch([(b"k", b"v", (), TS)] * 3, compression="snappy")
    for data in (buf, bytearray(buf), memoryview(buf), memoryview(b"xx" + buf)[2:]):
        assert decode_to_arrow(data, "t", 0).batch.num_rows == 3
