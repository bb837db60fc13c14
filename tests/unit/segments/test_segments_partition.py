"""A partition built from the project's encoder: offsets from files, seeks, ranges, read_committed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyarrow import fs as pafs
from seglog import BASE_TIME, PartitionBuilder

from kafka_spark.segments import PartitionLog, ScanStats, Segment, SegmentFiles, segment_file_name


def _offsets(log: PartitionLog, *args: object, **kwargs: object) -> list[int]:
    return [o for b in log.read(*args, **kwargs) for o in b.column("offset").to_pylist()]  # type: ignore[arg-type]


@pytest.fixture
def partition(tmp_path: Path) -> PartitionBuilder:
    """Three segments (the last one live: preallocated indexes), a gap, and transactions across a roll."""
    b = PartitionBuilder(tmp_path / "logs" / "orders-3", compression="gzip")
    b.batch(5)
    b.batch(4, producer_id=7, transactional=True)  # aborted below, after a roll
    b.batch(3)
    b.roll()
    b.batch(6, producer_id=8, transactional=True)
    b.end_txn(8, commit=True)
    b.batch(2, producer_id=7, transactional=True)
    b.end_txn(7, commit=False)
    b.batch(3, gap=4)  # offsets a compaction would leave out
    b.roll()
    for _ in range(6):
        b.batch(2, headers=[("h", b"x")])
    b.write(preallocate_indexes=50)
    (tmp_path / "logs" / "log-start-offset-checkpoint").write_text("0\n1\norders 3 2\n")
    (tmp_path / "logs" / "replication-offset-checkpoint").write_text("0\n1\norders 3 30\n")
    (tmp_path / "logs" / "recovery-point-offset-checkpoint").write_text("0\n1\norders 3 12\n")
    (b.directory / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    return b


def test_offsets_from_files(partition: PartitionBuilder) -> None:
    with PartitionLog.open(str(partition.directory)) as log:
        assert (log.topic, log.partition, len(log.segments)) == ("orders", 3, 3)
        assert log.log_start_offset == 2
        assert log.log_end_offset == partition.next_offset
        assert log.high_watermark == 30 and log.recovery_point == 12
        assert [(e.epoch, e.start_offset) for e in log.leader_epochs()] == [(0, 0)]
        every = _offsets(log)
        assert every == [o for o in sorted(partition.written.records) if o >= 2]


def test_rows_match_what_was_written(partition: PartitionBuilder) -> None:
    with PartitionLog.open(str(partition.directory)) as log:
        rows = [r for b in log.read(include_headers=True) for r in b.to_pylist()]
    for row in rows:
        key, value, headers, ts = partition.written.records[row["offset"]]
        assert (row["key"], row["value"], row["topic"], row["partition"]) == (key, value, "orders", 3)
        assert int(row["timestamp"].timestamp() * 1000) == ts
        assert row["headers"] == ([{"key": k, "value": v} for k, v in headers] or None)


def test_ranges_seek_through_the_indexes(partition: PartitionBuilder) -> None:
    written = sorted(partition.written.records)
    with PartitionLog.open(str(partition.directory)) as log:
        for lo in range(0, partition.next_offset + 2, 3):
            for hi in range(lo, partition.next_offset + 3, 5):
                assert _offsets(log, lo, hi) == [o for o in written if max(lo, 2) <= o < hi], (lo, hi)
        stats = ScanStats()
        assert _offsets(log, 33, 35, stats=stats) == [33, 34]
        # An index seek: the last segment's bytes before offset 32 are never read.
        assert stats.bytes_read < log.segments[-1].size


def test_read_committed_uses_txn_indexes_of_later_segments(partition: PartitionBuilder) -> None:
    with PartitionLog.open(str(partition.directory)) as log:
        aborted = log.aborted_transactions(0)
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(7, 5)]
        committed = _offsets(log, 0, None, isolation="read_committed")
    expected = [o for o in sorted(partition.written.records) if o >= 2 and o not in partition.written.aborted]
    assert committed == expected and partition.written.aborted


def test_seeks_by_offset_and_timestamp(partition: PartitionBuilder) -> None:
    with PartitionLog.open(str(partition.directory)) as log:
        seg, position = log.position_of(25)  # type: ignore[misc]
        assert seg.base_offset == 12 and position > 0
        assert log.position_of(10_000) is None
        # In a gap: the next batch, as Kafka answers.
        assert log.offset_for_timestamp(BASE_TIME + 23 * 10) == 26
        assert log.offset_for_timestamp(BASE_TIME + 7 * 10) == 7
        assert log.offset_for_timestamp(0) == 2
        assert log.offset_for_timestamp(BASE_TIME * 2) is None


def test_empty_active_segment_and_missing_indexes(tmp_path: Path) -> None:
    b = PartitionBuilder(tmp_path / "t-0")
    b.batch(3)
    b.roll()
    b.write()
    for p in b.directory.glob("*index"):
        p.unlink()
    (b.directory / segment_file_name(3, ".log")).write_bytes(b"")
    with PartitionLog.open(str(b.directory)) as log:
        assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 3, 0)
        assert _offsets(log, 1) == [1, 2]


def test_swap_replaces_the_segments_it_covers(partition: PartitionBuilder) -> None:
    d = partition.directory
    # A compaction that merged the first two segments was renamed .swap but not yet swapped in.
    shutil.copy(d / segment_file_name(0, ".log"), d / (segment_file_name(0, ".log") + ".swap"))
    with PartitionLog.open(str(d)) as log:
        assert [s.base_offset for s in log.segments] == [0, 12, 29]
        assert log.segments[0].files.swap
    (d / segment_file_name(0, ".log.cleaned")).write_bytes(b"")  # an unfinished split: ignore the swap
    with PartitionLog.open(str(d)) as log:
        assert not log.segments[0].files.swap


def test_a_file_renamed_deleted_after_listing_is_still_read(partition: PartitionBuilder) -> None:
    path = partition.directory / segment_file_name(0, ".log")
    seg = Segment(SegmentFiles(0, str(path)))
    path.rename(str(path) + ".deleted")
    assert seg.next_offset() == 12


def test_pyarrow_filesystem(partition: PartitionBuilder) -> None:
    with PartitionLog.open(str(partition.directory), filesystem=pafs.LocalFileSystem()) as log:
        assert log.log_start_offset == 2 and log.high_watermark == 30
        assert _offsets(log, 13, 17) == [13, 14, 15, 16]
