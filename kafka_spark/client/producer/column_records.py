"""Records a producer queues straight from Arrow columns, and the records of one queued batch.

`send_many` given Arrow columns keeps no Python object per record: its records are a `ColumnRows` (rows of a
`ColumnSource`, the call's key and value columns with their timestamp), which slices and reorders like a list of
records (reordering keeps row numbers; the rows are gathered when their batch is encoded), and a batch's
`BatchRecords` holds such rows (or records of `send()`) until it is encoded: by numpy and Arrow kernels when every
record came from columns, the keys and values gathered once per source and laid into the batch."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import overload

import numpy as np
import pyarrow as pa

from kafka_spark.client.records_adapter import (
    OutgoingRecord,
    Unsealed,
    column_lengths,
    encode_unsealed,
    encoding_columns,
    frame_records,
    lay_out_records,
)

Rows = range | np.ndarray
"""Row numbers in a `ColumnSource`: a run, or any rows in order."""
# Below this many records, a batch is cheaper to encode from Python values: the column encoder's numpy and Arrow
# calls cost ~70 us a batch whatever its size, the Python loop ~0.3 us a record (measured at 100 B and 1 KB: the
# column encoder takes 0.10 us a record at 2,000 records of 100 B, as much as the loop at 250 records of 1 KB).
FEW_FOR_COLUMNS = 200


class ColumnSource:
    """One call's key (None: null keys) and value columns, binary or large_binary, with the time its records
    were sent and each key's and value's length (-1 for a null), worked out once for the call."""

    __slots__ = ("encoding", "key_lengths", "keys", "timestamp", "value_lengths", "values")

    def __init__(self, keys: pa.Array | None, values: pa.Array, timestamp: int) -> None:
        self.keys, self.values, self.timestamp = keys, values, timestamp
        self.key_lengths = None if keys is None else column_lengths(keys)
        self.value_lengths = column_lengths(values)
        # The key and value columns as the encoder best picks rows of them (`encoding_columns`): made now, while
        # the call's columns are still in the core's cache, once for all the call's batches.
        self.encoding = encoding_columns(keys, values)

    def record(self, row: int) -> OutgoingRecord:
        key = None if self.keys is None else self.keys[row].as_py()
        return key, self.values[row].as_py(), (), self.timestamp

    def rows(self, rows: Rows) -> tuple[pa.Array | None, pa.Array]:
        """The key and value columns of `rows`: slices for a run, copies otherwise."""
        if isinstance(rows, range):
            return (None if self.keys is None else self.keys.slice(rows.start, len(rows)),
                    self.values.slice(rows.start, len(rows)))
        return None if self.keys is None else self.keys.take(rows), self.values.take(rows)

    def lengths(self, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
        """The key lengths (all -1 without keys) and value lengths of `rows`."""
        at = slice(rows.start, rows.stop) if isinstance(rows, range) else rows
        values = self.value_lengths[at]
        return np.full(len(values), -1, np.int64) if self.key_lengths is None else self.key_lengths[at], values


class ColumnRows:
    """Some rows of a `ColumnSource`, in order: what `send_many` queues for Arrow columns. Sliced (and indexed)
    like the list of records it stands for; `take` reorders."""

    __slots__ = ("rows", "source")

    def __init__(self, source: ColumnSource, rows: Rows) -> None:
        self.source, self.rows = source, rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, item: int) -> OutgoingRecord: ...

    @overload
    def __getitem__(self, item: slice) -> ColumnRows: ...

    def __getitem__(self, item: int | slice) -> OutgoingRecord | ColumnRows:
        if isinstance(item, slice):
            return ColumnRows(self.source, self.rows[item])
        return self.source.record(int(self.rows[item]))

    def __iter__(self) -> Iterator[OutgoingRecord]:
        record = self.source.record
        return (record(row) for row in (self.rows if isinstance(self.rows, range) else self.rows.tolist()))

    def take(self, order: np.ndarray) -> ColumnRows:
        """The rows at positions `order`, in that order: row numbers only, the columns are gathered when a batch
        is encoded (one gather a batch, whose output the encoder then reads while it is still in cache)."""
        rows = self.rows
        return ColumnRows(self.source, (np.arange(rows.start, rows.stop) if isinstance(rows, range) else rows)[order])


Records = Sequence[OutgoingRecord] | ColumnRows
"""A send_many() call's records: tuples, or rows of its Arrow columns."""


def reordered(records: Records, order: np.ndarray) -> Records:
    """`records` at positions `order`, in that order."""
    if isinstance(records, ColumnRows):
        return records.take(order)
    return [records[i] for i in order.tolist()]


def picked(records: Records, positions: np.ndarray | None) -> Records:
    """`records` at `positions` (all of them for None)."""
    return records if positions is None else reordered(records, positions)


Part = list[OutgoingRecord] | ColumnRows


class BatchRecords:
    """The records of one queued batch, in order: lists of records (from `send()` or `send_many` with Python
    values) and runs of `ColumnRows`, kept as given (iterating or indexing gives record tuples); and, while every
    part is rows of columns, the bytes of its first records laid out already (`lay_out`)."""

    __slots__ = ("_count", "_laid", "_laid_count", "_laid_parts", "_parts")

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._count = 0
        # the laid-out bytes of the first _laid_count records (the first _laid_parts parts); None once a part of
        # Python records makes the batch one for the tuple encoder
        self._laid: list[memoryview] | None = []
        self._laid_count = self._laid_parts = 0

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[OutgoingRecord]:
        for part in self._parts:
            yield from part

    def __getitem__(self, index: int) -> OutgoingRecord:
        if index < 0:
            index += self._count
        for part in self._parts:
            if index < len(part):
                return part[index]
            index -= len(part)
        raise IndexError("record index out of range")

    def append(self, record: OutgoingRecord) -> None:
        self.extend([record])

    def extend(self, records: Iterable[OutgoingRecord] | ColumnRows) -> None:
        """Add records at the end: a `ColumnRows` as it is (joined to the last run when it continues it and is not
        laid out yet)."""
        parts = self._parts
        last = parts[-1] if len(parts) > self._laid_parts else None
        if isinstance(records, ColumnRows):
            if not len(records):
                return
            self._count += len(records)
            if isinstance(last, ColumnRows) and last.source is records.source and isinstance(last.rows, range) \
                    and isinstance(records.rows, range) and last.rows.stop == records.rows.start:
                parts[-1] = ColumnRows(last.source, range(last.rows.start, records.rows.stop))
                return
            parts.append(records)
            return
        items = list(records)
        if not items:
            return
        self._count += len(items)
        self._laid = None
        if isinstance(last, list):
            last.extend(items)
        else:
            parts.append(items)

    @property
    def pending(self) -> int:
        """How many records `lay_out` would lay out now (0 for a batch of Python records)."""
        return 0 if self._laid is None else self._count - self._laid_count

    def encode_unsealed(self, compression: str) -> Unsealed:
        """These records as a v2 batch without its producer fields and CRC (`records_adapter.seal_records`)."""
        parts = self._parts
        if self._laid is not None and parts and (self._laid_count or self._count >= FEW_FOR_COLUMNS):
            lay_out([self])
            stamps = [p.source.timestamp for p in parts if isinstance(p, ColumnRows)]
            return frame_records(self._laid, self._count, stamps[0], max(stamps), compression)
        if self._laid is not None and parts:
            # a few rows: cheaper from Python values than by the column encoder's kernels
            records: list[OutgoingRecord] = []
            for part in parts:
                assert isinstance(part, ColumnRows)
                key_column, value_column = part.source.rows(part.rows)
                keys = [None] * len(part) if key_column is None else key_column.to_pylist()
                records += zip(keys, value_column.to_pylist(), repeat(()), repeat(part.source.timestamp),
                               strict=False)
            return encode_unsealed(records, compression)
        return encode_unsealed(parts[0] if len(parts) == 1 and isinstance(parts[0], list) else list(self),
                               compression)


def lay_out(batches: Iterable[BatchRecords], least: int = 1) -> None:
    """Lay out the records of `batches` that are rows of columns and not laid out yet, by one pass of the column
    encoder over all of them, when there are at least `least` (its kernels cost ~70 us a call whatever its size):
    each batch keeps its piece of the bytes. Called with a call's rows while its columns are in cache."""
    work = [b for b in batches if b.pending]
    if sum(b.pending for b in work) < max(least, 1):
        return
    # consecutive parts of one source are taken together: one pick of rows per source run, not per part
    runs: list[tuple[ColumnSource, list[Rows]]] = []
    offsets: list[np.ndarray] = []
    stamps: list[tuple[int, int]] = []  # (timestamp delta, records)
    for batch in work:
        first = batch._parts[0]
        assert isinstance(first, ColumnRows)
        base = first.source.timestamp  # the batch's base timestamp: its first record's
        offsets.append(np.arange(batch._laid_count, batch._count, dtype=np.int64))
        for part in batch._parts[batch._laid_parts:]:
            assert isinstance(part, ColumnRows)
            if runs and runs[-1][0] is part.source:
                runs[-1][1].append(part.rows)
            else:
                runs.append((part.source, [part.rows]))
            stamps.append((part.source.timestamp - base, len(part)))
    picks = [rows[0] if len(rows) == 1 else np.concatenate(
        [np.arange(r.start, r.stop) if isinstance(r, range) else r for r in rows]) for _, rows in runs]
    keys, values, key_lengths, value_lengths = [], [], [], []
    for (source, _), rows in zip(runs, picks, strict=True):
        key_column, value_column = source.encoding
        keys.append(key_column)
        values.append(value_column)
        key_length, value_length = source.lengths(rows)
        key_lengths.append(key_length)
        value_lengths.append(value_length)
    key_parts = None if all(k is None for k in keys) else \
        [pa.nulls(len(v), v.type) if k is None else k for k, v in zip(keys, values, strict=True)]
    deltas = None if all(d == 0 for d, _ in stamps) else \
        np.repeat(np.array([d for d, _ in stamps], np.int64), [n for _, n in stamps])
    lengths = (None if key_parts is None else _joined(key_lengths), _joined(value_lengths))
    laid, sizes = lay_out_records(key_parts, values, deltas, _joined(offsets), lengths, picks)
    ends = np.cumsum(sizes)
    at = 0
    for batch, batch_offsets in zip(work, offsets, strict=True):
        stop = int(ends[at + len(batch_offsets) - 1])
        start = int(ends[at - 1]) if at else 0
        assert batch._laid is not None
        batch._laid.append(laid[start:stop])
        batch._laid_count, batch._laid_parts = batch._count, len(batch._parts)
        at += len(batch_offsets)


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
