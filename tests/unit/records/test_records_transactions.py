"""read_committed: aborted transactions and control records, against a hand-built log."""

from __future__ import annotations

import pytest
from records_support import arrow_rows, record_rows

from kafka_spark.records import ControlType, decode_to_arrow, encode_batch, encode_control_batch, iter_records

TS = 1_700_000_000_000
A, B = 10, 20


def data(base: int, n: int, pid: int = -1, codec: str = "none") -> bytes:
    records = [(f"{pid}".encode(), f"value-{base + i}".encode(), (), TS + base + i) for i in range(n)]
    if pid < 0:
        return encode_batch(records, base_offset=base, compression=codec)
    return encode_batch(records, base_offset=base, compression=codec, producer_id=pid, producer_epoch=0,
                        base_sequence=base, transactional=True)


def marker(base: int, pid: int, kind: ControlType) -> bytes:
    return encode_control_batch(kind, base_offset=base, producer_id=pid, producer_epoch=0, timestamp=TS)


LOG = b"".join([
    data(0, 3),                       # 0-2 plain
    data(3, 2, A, "zstd"),            # 3-4 A, committed at 7
    data(5, 2, B),                    # 5-6 B, aborted at 8
    marker(7, A, ControlType.COMMIT),
    marker(8, B, ControlType.ABORT),
    data(9, 2, A, "lz4"),             # 9-10 A, aborted at 12
    data(11, 1, B),                   # 11 B, a new transaction, committed at 13
    marker(12, A, ControlType.ABORT),
    marker(13, B, ControlType.COMMIT),
    data(14, 1),                      # 14 plain
])
ABORTED = [(B, 5), (A, 9)]


def offsets(rows: list[tuple]) -> list[int]:
    return [row[0] for row in rows]


@pytest.mark.parametrize(("isolation", "want", "aborted_count"), [
    ("read_committed", [0, 1, 2, 3, 4, 11, 14], 4),
    ("read_uncommitted", [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 14], 0),
])
def test_isolation_levels(isolation: str, want: list[int], aborted_count: int, vectorised_only: None) -> None:
    scalar = record_rows(iter_records(LOG, aborted=ABORTED, isolation=isolation), headers=False)
    assert offsets(scalar) == want
    result = decode_to_arrow(LOG, "t", 0, aborted=ABORTED, isolation=isolation)
    assert arrow_rows(result.batch) == scalar
    assert result.skipped_control == 4
    assert result.skipped_aborted == aborted_count
    assert result.next_offset == 15
    assert result.batches == 10


def test_control_records_are_visible_only_when_asked() -> None:
    controls = [r for r in iter_records(LOG, include_control=True) if r.is_control]
    assert [(r.offset, r.control.type) for r in controls] == [
        (7, ControlType.COMMIT), (8, ControlType.ABORT), (12, ControlType.ABORT), (13, ControlType.COMMIT)]
    assert all(r.batch.is_control for r in controls)


def test_transaction_started_before_the_buffer() -> None:
    # A fetch starting mid-transaction still lists the transaction's first offset, which lies before it.
    tail = LOG[sum(len(x) for x in (data(0, 3), data(3, 2, A, "zstd"))):]
    rows = arrow_rows(decode_to_arrow(tail, "t", 0, aborted=[(B, 5), (A, 9)], isolation="read_committed").batch)
    assert offsets(rows) == [11, 14]
    rows = arrow_rows(decode_to_arrow(tail, "t", 0, aborted=[(B, 2)], isolation="read_committed").batch)
    assert offsets(rows) == [9, 10, 11, 14]


def test_offset_range_with_transactions() -> None:
    result = decode_to_arrow(LOG, "t", 0, start_offset=4, end_offset=12, aborted=ABORTED, isolation="read_committed")
    assert offsets(arrow_rows(result.batch)) == [4, 11]
    assert result.skipped_out_of_range == 3 + 1 + 1  # 0-2, 3 and 14
    scalar = iter_records(LOG, start_offset=4, end_offset=12, aborted=ABORTED, isolation="read_committed")
    assert [r.offset for r in scalar] == [4, 11]


def test_no_aborted_list_keeps_everything_but_control() -> None:
    rows = arrow_rows(decode_to_arrow(LOG, "t", 0, isolation="read_committed").batch)
    assert offsets(rows) == [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 14]


def test_unknown_isolation_is_rejected() -> None:
    with pytest.raises(ValueError, match="isolation"):
        decode_to_arrow(LOG, "t", 0, isolation="read_dirty")
