"""Truncated and corrupted segments: never a record that was not written, never an untyped error.

Every byte of a batch is under its CRC except the prefix before it (offset, length, leader epoch,
magic): the length and magic are checked by the framing, the offset by the rule that offsets only
grow; the flips below avoid only the offset field of the batch that would then just be renumbered.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seglog import PartitionBuilder

from kafka_spark.errors import KafkaSparkError
from kafka_spark.records import scan_batches
from kafka_spark.records.crc import crc32c
from kafka_spark.segments import PartitionLog, ScanStats, SegmentCorruptError, segment_file_name

_CACHE: dict[str, tuple[bytes, dict, list[int]]] = {}


def _original(compression: str | None, root: Path) -> tuple[bytes, dict, list[int]]:
    key = str(compression)
    if key not in _CACHE:
        b = PartitionBuilder(root / f"orig-{key}" / "t-0", compression=compression)
        for i in range(12):
            b.batch(1 + i % 4, headers=[("h", bytes([i]))] if i % 2 else ())
        b.write()
        data = (b.directory / segment_file_name(0, ".log")).read_bytes()
        starts = [info.position for info in scan_batches(data).batches]
        _CACHE[key] = (data, b.written.records, starts)
    return _CACHE[key]


def _read(tmp: Path, data: bytes, skip: bool) -> tuple[list[dict], ScanStats]:
    d = tmp / "t-0"
    d.mkdir(parents=True, exist_ok=True)
    (d / segment_file_name(0, ".log")).write_bytes(data)
    stats = ScanStats()
    with PartitionLog.open(str(d)) as log:
        rows = [r for b in log.read(include_headers=True, skip_corrupt=skip, stats=stats) for r in b.to_pylist()]
    return rows, stats


def _assert_written(rows: list[dict], written: dict) -> None:
    for row in rows:
        key, value, headers, _ = written[row["offset"]]
        assert (row["key"], row["value"]) == (key, value)
        assert row["headers"] == ([{"key": k, "value": v} for k, v in headers] or None)


SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(codec=st.sampled_from([None, "gzip", "zstd"]), cut=st.integers(min_value=0, max_value=10_000))
def test_truncation_ends_the_segment(tmp_path_factory: pytest.TempPathFactory, codec: str | None, cut: int) -> None:
    data, written, starts = _original(codec, tmp_path_factory.getbasetemp())
    cut %= len(data) + 1
    rows, stats = _read(tmp_path_factory.mktemp("cut"), data[:cut], skip=False)
    whole = [s for s, e in zip(starts, [*starts[1:], len(data)], strict=True) if e <= cut]
    assert len({r["offset"] for r in rows}) == len(rows)
    _assert_written(rows, written)
    complete = scan_batches(data[:cut]).batches
    assert len(complete) == len(whole)
    assert len(rows) == sum(b.count for b in complete)
    if complete:
        assert stats.trailing_bytes == cut - (complete[-1].position + complete[-1].size)


@SETTINGS
@given(codec=st.sampled_from([None, "gzip", "zstd"]), where=st.integers(min_value=0, max_value=10_000),
       mask=st.integers(min_value=1, max_value=255), skip=st.booleans())
def test_flipped_bytes_error_or_skip(tmp_path_factory: pytest.TempPathFactory, codec: str | None, where: int,
                                     mask: int, skip: bool) -> None:
    data, written, starts = _original(codec, tmp_path_factory.getbasetemp())
    where %= len(data)
    if any(s <= where < s + 8 for s in starts):
        where = (where + 8) % len(data)
        if any(s <= where < s + 8 for s in starts):
            return
    bad = bytearray(data)
    bad[where] ^= mask
    try:
        rows, stats = _read(tmp_path_factory.mktemp("flip"), bytes(bad), skip=skip)
    except SegmentCorruptError as exc:
        assert not skip
        assert exc.path.endswith(".log") and exc.position is not None and str(exc.position) in str(exc)
        return
    _assert_written(rows, written)
    if len(rows) < len(written):
        assert stats.corrupt_batches or stats.trailing_bytes
    if stats.corrupt_batches:
        assert skip and stats.skipped_bytes > 0


def _with_crc(batch: bytearray) -> bytearray:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return batch


def test_hostile_length_fields(tmp_path: Path) -> None:
    data, written, starts = _original(None, tmp_path)
    last = starts[-1]
    # A length far beyond the file: read as a partial tail, and nothing that big is allocated.
    huge = bytearray(data)
    struct.pack_into(">i", huge, last + 8, 0x7FFFFFFF)
    rows, stats = _read(tmp_path / "huge", bytes(huge), skip=False)
    assert len(rows) == len(written) - 4 and stats.trailing_bytes == len(data) - last
    assert stats.bytes_read <= 2 * len(data)
    # A negative length: corrupt, named by file, position and offset; or skipped to the end and counted.
    negative = bytearray(data)
    struct.pack_into(">i", negative, last + 8, -1)
    with pytest.raises(SegmentCorruptError, match=f"byte {last} "):
        _read(tmp_path / "neg", bytes(negative), skip=False)
    rows, stats = _read(tmp_path / "neg-skip", bytes(negative), skip=True)
    assert len(rows) == len(written) - 4
    assert (stats.corrupt_batches, stats.skipped_bytes) == (1, len(data) - last)
    # A record count the batch cannot hold, with a CRC that matches it.
    batch = bytearray(data[last:])
    struct.pack_into(">i", batch, 57, 0x7FFFFFFF)
    with pytest.raises(SegmentCorruptError, match="claims 2147483647 records"):
        _read(tmp_path / "count", data[:last] + bytes(_with_crc(batch)), skip=False)


def test_zero_tail_is_the_end_and_garbage_is_not(tmp_path: Path) -> None:
    data, written, _ = _original("gzip", tmp_path)
    rows, stats = _read(tmp_path / "zeros", data + b"\0" * 4096, skip=False)
    assert len(rows) == len(written) and stats.trailing_bytes == 4096
    with pytest.raises(SegmentCorruptError):
        _read(tmp_path / "garbage", data + b"\0" * 12 + b"\x01" * 100, skip=False)


def test_offsets_going_backwards_are_corrupt(tmp_path: Path) -> None:
    data, written, starts = _original(None, tmp_path)
    bad = bytearray(data)
    struct.pack_into(">q", bad, starts[5], 0)
    with pytest.raises(KafkaSparkError, match="do not follow"):
        _read(tmp_path / "back", bytes(bad), skip=False)
    rows, stats = _read(tmp_path / "back-skip", bytes(bad), skip=True)
    _assert_written(rows, written)
    assert stats.corrupt_batches == 1 and stats.skipped_offsets == scan_batches(data).batches[5].count
