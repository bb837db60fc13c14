"""The last stable offset from files: producer snapshots, then the batches after them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from seglog import PartitionBuilder

from kafka_spark.records.crc import crc32c
from kafka_spark.segments import PartitionLog, segment_file_name


def _snapshot(directory: Path, offset: int, open_txns: dict[int, int], corrupt: bool = False) -> None:
    """A producer snapshot at `offset` whose producers have transactions open from the given offsets."""
    entries = [(pid, 0, 0, first, 0, 1, 0, first) for pid, first in open_txns.items()]
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    crc = crc32c(body) ^ (1 if corrupt else 0)
    (directory / segment_file_name(offset, ".snapshot")).write_bytes(struct.pack(">hI", 1, crc) + body)


def _hw(directory: Path, hw: int) -> None:
    (directory.parent / "replication-offset-checkpoint").write_text(f"0\n1\norders 0 {hw}\n")


@pytest.fixture
def builder(tmp_path: Path) -> PartitionBuilder:
    """Producer 7 opens a transaction at 5 and never ends it; 8 commits one after it; plain records follow."""
    b = PartitionBuilder(tmp_path / "logs" / "orders-0")
    b.batch(5)
    b.batch(3, producer_id=7, transactional=True)  # offsets 5..7, left open
    b.roll()
    b.batch(4, producer_id=8, transactional=True)  # 8..11
    b.end_txn(8, commit=True)  # 12
    b.batch(2)  # 13..14
    b.write()
    return b


def _lso(b: PartitionBuilder, hw: int) -> tuple[int, int]:
    _hw(b.directory, hw)
    with PartitionLog.open(str(b.directory)) as log:
        return log.high_watermark, log.last_stable_offset


def test_an_open_transaction_holds_the_stable_offset_back(builder: PartitionBuilder) -> None:
    assert _lso(builder, 15) == (15, 5)
    assert _lso(builder, 5) == (5, 5)  # the open transaction starts at the high watermark: not below it
    assert _lso(builder, 3) == (3, 3)


def test_an_ended_transaction_releases_it(builder: PartitionBuilder) -> None:
    builder.end_txn(7, commit=False)  # 15
    builder.batch(1)
    builder.write()
    assert _lso(builder, 17) == (17, 17)
    assert _lso(builder, 12) == (12, 5)  # the abort marker sits above this high watermark


def test_the_snapshot_says_which_transactions_were_open(builder: PartitionBuilder) -> None:
    # Producer 7's batch at 5 is in the first segment; the snapshot at 8 carries its open transaction,
    # so the reader need not look at the first segment at all.
    _snapshot(builder.directory, 8, {7: 5})
    (builder.directory / segment_file_name(0, ".log")).write_bytes(b"")
    assert _lso(builder, 15) == (15, 5)
    # A snapshot at 13 that lists no open transaction wins over the older one (the broker's view).
    _snapshot(builder.directory, 13, {})
    assert _lso(builder, 15) == (15, 15)
    # One that is corrupt is passed over, as a broker does, for the older one.
    _snapshot(builder.directory, 13, {}, corrupt=True)
    assert _lso(builder, 15) == (15, 5)
    # Snapshots past the high watermark are not used.
    _snapshot(builder.directory, 20, {})
    assert _lso(builder, 15) == (15, 5)


def test_plain_logs_are_stable_to_the_high_watermark(tmp_path: Path) -> None:
    b = PartitionBuilder(tmp_path / "logs" / "orders-0", compression="lz4")
    b.batch(3)
    b.batch(2, producer_id=3)  # idempotent, not transactional
    b.write()
    assert _lso(b, 5) == (5, 5)
