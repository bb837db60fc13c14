"""A batch's records from Arrow columns (`client.column_records`): they read back as the record tuples they stand
for, and a batch mixing them with `send()` records, rows of several calls (other timestamps) or rows in any order
encodes to the bytes of the same tuples, whether its rows were laid out call by call (several batches at once) or
when it is sealed."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kafka_spark.client.producer.column_records import (
    BatchRecords,
    ColumnRows,
    ColumnSource,
    lay_out,
    picked,
    reordered,
)
from kafka_spark.records import encode_produced_records

STAMP = 1_700_000_000_000


def _source(seed: int, count: int, stamp: int, null_keys: bool = False) -> tuple[ColumnSource, list[tuple]]:
    rng = random.Random(seed)
    keys = None if null_keys else [None if rng.random() < 0.2 else b"k%d" % rng.randrange(9) for _ in range(count)]
    values = [None if rng.random() < 0.1 else rng.randbytes(rng.choice((0, 5, 300))) for _ in range(count)]
    source = ColumnSource(None if keys is None else pa.array(keys, pa.binary()), pa.array(values, pa.binary()), stamp)
    return source, [(None if keys is None else keys[i], values[i], (), stamp) for i in range(count)]


def test_rows_read_back_as_their_records() -> None:
    source, records = _source(1, 50, STAMP)
    rows = ColumnRows(source, range(50))
    assert list(rows) == records
    assert rows[7] == records[7] and list(rows[10:20]) == records[10:20]
    order = np.array([5, 3, 40, 0])
    assert list(reordered(rows, order)) == [records[i] for i in order]
    assert list(reordered(rows, order)[1:3]) == [records[3], records[40]]
    assert list(picked(rows[10:], np.array([2, 0]))) == [records[12], records[10]]
    assert picked(rows, None) is rows


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_mixed_batches_encode_as_their_tuples(compression: str) -> None:
    first, first_records = _source(2, 300, STAMP)
    second, second_records = _source(3, 200, STAMP + 9000, null_keys=True)
    sent_alone = (b"key", b"value", (("h", b"x"),), STAMP - 4)
    cases = [
        # runs of one call, joined when they continue each other
        [ColumnRows(first, range(0, 100)), ColumnRows(first, range(100, 180))],
        # rows out of order (a keyed call grouped by partition), then another call's rows, one record at a time
        [ColumnRows(first, np.array([9, 4, 250])), *(ColumnRows(second, range(i, i + 1)) for i in (0, 1, 5, 6))],
        # a send() record between columns
        [ColumnRows(first, range(3)), [sent_alone], ColumnRows(second, np.array([7, 2]))],
    ]
    everything = {id(first): first_records, id(second): second_records}
    for parts in cases:
        batch = BatchRecords()
        expected: list[tuple] = []
        for part in parts:
            batch.extend(part)
            if isinstance(part, ColumnRows):
                rows = part.rows if isinstance(part.rows, range) else part.rows.tolist()
                expected += [everything[id(part.source)][i] for i in rows]
            else:
                expected += part
        assert len(batch) == len(expected) and list(batch) == expected
        assert batch[len(expected) - 1] == expected[-1] and batch[-1] == expected[-1]
        want = encode_produced_records(expected, None if compression == "none" else compression)
        assert bytes(batch.encode_unsealed(compression)) == bytes(want)
    joined = BatchRecords()
    joined.extend(ColumnRows(first, range(0, 10)))
    joined.extend(ColumnRows(first, range(10, 30)))
    joined.extend(ColumnRows(first, range(0, 0)))
    assert len(joined._parts) == 1 and len(joined) == 30
    with pytest.raises(IndexError):
        joined[30]


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_rows_laid_out_call_by_call_encode_as_their_tuples(compression: str) -> None:
    # Three calls (other timestamps, one with null keys) into three open batches, each call's rows laid out once
    # for all batches when the call ends (the last call's few rows wait for the seal); a send() record makes a
    # batch one for the tuple encoder again.
    calls = [_source(4, 900, STAMP), _source(5, 600, STAMP + 70, null_keys=True), _source(6, 40, STAMP + 99_000)]
    batches = [BatchRecords() for _ in range(3)]
    expected: list[list[tuple]] = [[], [], []]
    rng = np.random.default_rng(8)
    for n, (source, records) in enumerate(calls):
        before = [len(e) for e in expected]
        rows = np.arange(len(records))
        owner = rng.integers(0, 3, len(records))
        for b, batch in enumerate(batches):
            mine = rows[owner == b]
            if b == 0:
                batch.extend(ColumnRows(source, range(0, 10)))  # runs of rows in order
                batch.extend(ColumnRows(source, range(10, 25)))
                mine = np.arange(25, len(records))[owner[25:] == 0]
                expected[b] += records[:25]
            batch.extend(ColumnRows(source, mine))
            expected[b] += [records[i] for i in mine.tolist()]
        lay_out(batches, 200)  # the last call's 40 rows stay for the seal
        assert [b.pending for b in batches] == ([0, 0, 0] if n < 2 else
                                                [len(e) - b for e, b in zip(expected, before, strict=True)])
    mixed = batches[2]
    mixed.append((b"k", b"v", (("h", b"1"),), STAMP + 5))
    expected[2].append((b"k", b"v", (("h", b"1"),), STAMP + 5))
    assert mixed.pending == 0
    for batch, records in zip(batches, expected, strict=True):
        assert list(batch) == records
        want = encode_produced_records(records, None if compression == "none" else compression)
        assert bytes(batch.encode_unsealed(compression)) == bytes(want)
