"""Names, listings, indexes, checkpoints, transaction indexes and producer snapshots, from bytes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafka_spark.records.crc import crc32c
from kafka_spark.segments import (
    CheckpointError,
    IndexCorruptError,
    LocalStorage,
    SnapshotCorruptError,
    list_partitions,
    list_segments,
    offset_index,
    parse_leader_epochs,
    parse_offset_checkpoint,
    parse_partition_dir,
    read_snapshot,
    read_txn_index,
    segment_file_name,
    time_index,
)
from kafka_spark.segments.indexes import check_offset_index, check_time_index, kafka_entries, offset_slots

UUID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(("name", "expected"), [
    ("orders-0", ("orders", 0)),
    ("my-topic-12", ("my-topic", 12)),
    ("a.b_c-3", ("a.b_c", 3)),
    (f"orders-0.{UUID}-delete", None),
    (f"orders-0.{UUID}-future", None),
    (f"orders-0.{UUID}-stray", None),
    ("remote-log-index-cache", None),
    ("__cluster_metadata-0", None),
    ("orders", None),
    ("-0", None),
    ("orders-x", None),
])
def test_partition_dir_names(name: str, expected: tuple[str, int] | None) -> None:
    assert parse_partition_dir(name) == expected


def test_listing_skips_leftovers_and_pairs_index_files(tmp_path: Path) -> None:
    for topic in ("t-0", "t-1", f"t-2.{UUID}-delete", "__cluster_metadata-0", "not a partition"):
        (tmp_path / topic).mkdir()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    assert [(p.topic, p.partition) for p in list_partitions(str(tmp_path))] == [("t", 0), ("t", 1)]
    part = tmp_path / "t-0"
    for base in (0, 100):
        (part / segment_file_name(base, ".log")).write_bytes(b"")
    (part / segment_file_name(0, ".index")).write_bytes(b"")
    (part / segment_file_name(100, ".txnindex")).write_bytes(b"")
    for leftover in (".log.deleted", ".index.deleted", ".log.cleaned"):
        (part / (segment_file_name(50, "") + leftover)).write_bytes(b"")
    (part / (segment_file_name(200, ".log") + ".swap")).write_bytes(b"")
    (part / "leader-epoch-checkpoint").write_text("0\n0\n")
    listing = list_segments(LocalStorage(), str(part))
    assert [(s.base_offset, bool(s.index), bool(s.time_index), bool(s.txn_index)) for s in listing.segments] == [
        (0, True, False, False), (100, False, False, True)]
    assert [s.base_offset for s in listing.swaps] == [200] and listing.min_cleaned == 50


def _index(entries: list[tuple[int, int]], zeros: int = 0) -> bytes:
    return b"".join(struct.pack(">ii", r, p) for r, p in entries) + b"\0" * 8 * zeros


def test_offset_index_stops_at_preallocated_zeros_and_torn_entries() -> None:
    data = _index([(3, 100), (7, 250), (9, 400)], zeros=1000)
    assert kafka_entries(offset_slots(data)["relative_offset"]) == 3
    index = offset_index(data, 1000, log_size=10_000)
    assert index.offsets.tolist() == [1003, 1007, 1009]
    assert index.lookup(1000) == (1000, 0)
    assert index.lookup(1008) == (1007, 250)
    assert index.lookup(5000) == (1009, 400)
    assert index.upper_position(1003) == 250 and index.upper_position(1004) == 400
    assert index.upper_position(1009) is None
    # A torn last entry (offset written, position not yet) and positions past the log are dropped.
    assert len(offset_index(_index([(3, 100), (7, 0)]), 0, 10_000)) == 1
    assert len(offset_index(_index([(3, 100), (7, 20_000)]), 0, 10_000)) == 1
    assert len(offset_index(_index([(3, 100), (2, 200)]), 0, 10_000)) == 1
    assert len(offset_index(b"\x01\x02\x03", 0)) == 0


def test_time_index_and_sanity_checks() -> None:
    tix = b"".join(struct.pack(">qi", t, r) for t, r in [(10, 1), (20, 4), (30, 4)]) + b"\0" * 12 * 5
    index = time_index(tix, 100)
    assert index.timestamps.tolist() == [10, 20, 30] and index.offsets.tolist() == [101, 104, 104]
    assert index.lookup(25) == (20, 104) and index.lookup(5) == (-1, 100)
    with pytest.raises(IndexCorruptError, match="last timestamp is 0"):
        check_time_index(tix, 100, "x.timeindex")
    check_time_index(tix[:36], 100, "x.timeindex")
    check_offset_index(_index([(1, 0)], zeros=3), 0, "x.index")
    with pytest.raises(IndexCorruptError, match="multiple of 8"):
        check_offset_index(b"\0" * 9, 0, "x.index")


def test_txn_index_entries_partial_tail_and_version() -> None:
    entry = struct.pack(">hqqqq", 0, 7, 10, 20, 15)
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
            for e in read_txn_index(entry * 2 + entry[:20])] == [(7, 10, 20, 15)] * 2
    with pytest.raises(IndexCorruptError, match="version 1"):
        read_txn_index(b"\x01" + entry[1:], "x.txnindex")


def test_checkpoint_files() -> None:
    text = "0\n3\nt 0 42\nt 1 7\nother-topic 5 100\n"
    assert parse_offset_checkpoint(text) == {("t", 0): 42, ("t", 1): 7, ("other-topic", 5): 100}
    assert parse_offset_checkpoint("") == {}
    assert [(e.epoch, e.start_offset) for e in parse_leader_epochs("0\n2\n0 0\n3 120\n")] == [(0, 0), (3, 120)]
    for bad, why in [("1\n0\n", "Unrecognised version"), ("0\n2\nt 0 1\n", "Expected \\[2\\]"),
                     ("0\n1\nt 0\n", "Malformed"), ("0\n1\nt x 1\n", "Malformed")]:
        with pytest.raises(CheckpointError, match=why):
            parse_offset_checkpoint(bad)


def _snapshot(entries: list[tuple], version: int = 1) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", version, crc32c(body)) + body


def test_producer_snapshots() -> None:
    data = _snapshot([(5, 1, 9, 30, 4, 1234, 2, -1), (6, 0, 2, 40, 4, 99, 0, 35)])
    first, second = read_snapshot(data)
    assert (first.producer_id, first.first_sequence, first.current_txn_first_offset) == (5, 5, None)
    assert (second.first_sequence, second.current_txn_first_offset) == (0x7FFFFFFF - 1, 35)
    with pytest.raises(SnapshotCorruptError, match="CRC is no longer valid"):
        read_snapshot(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(SnapshotCorruptError, match="unknown file version 2"):
        read_snapshot(_snapshot([], version=2))
    # A hostile count is refused before anything is allocated for it.
    with pytest.raises(SnapshotCorruptError, match="schema validation"):
        read_snapshot(struct.pack(">hIi", 1, 0, 0x7FFFFFFF))


class _CountingStorage(LocalStorage):
    """The local filesystem, counting the bytes read."""

    def __init__(self) -> None:
        self.read = 0

    def open(self, path: str):
        source = super().open(path)
        storage, read = self, source.read

        def counted(position: int, length: int) -> bytes:
            data = read(position, length)
            storage.read += len(data)
            return data

        source.read = counted
        return source


@pytest.mark.parametrize("entries", [3, 30_000])
def test_a_segment_reads_its_preallocated_indexes_only_to_their_last_entry(tmp_path: Path, entries: int) -> None:
    from kafka_spark.segments import Segment, SegmentFiles

    log = tmp_path / segment_file_name(500, ".log")
    log.write_bytes(b"\0" * 40 * (entries + 1))
    index = _index([(i + 1, 40 * (i + 1)) for i in range(entries)], zeros=1_310_720 - entries)  # Kafka's 10 MiB
    times = b"".join(struct.pack(">qi", 1000 + i, i + 1) for i in range(entries)) + b"\0" * 12 * 100_000
    (tmp_path / segment_file_name(500, ".index")).write_bytes(index)
    (tmp_path / segment_file_name(500, ".timeindex")).write_bytes(times)
    storage = _CountingStorage()
    segment = Segment(SegmentFiles(500, str(log), str(tmp_path / segment_file_name(500, ".index")),
                                   str(tmp_path / segment_file_name(500, ".timeindex"))), storage)
    assert segment.offset_index().offsets.tolist() == offset_index(index, 500, log.stat().st_size).offsets.tolist()
    assert segment.offset_index().offsets.tolist()[-1] == 500 + entries
    assert segment.time_index().timestamps.tolist() == time_index(times, 500).timestamps.tolist()
    # Both indexes' entries and at most as many bytes again: not the megabytes of zeros after them.
    assert storage.read <= 2 * (8 + 12) * entries + 2 * (96 << 10)
