"""How `Producer.send_many` lays out many records: lengths, key partitions, per-topic plans and the order they
are appended in, with numpy over the whole call instead of Python work per record (no I/O here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.column_records import Records, reordered
from kafka_spark.client.producer.delivery import Span
from kafka_spark.client.producer.murmur_vector import murmur2_buffers, murmur2_many
from kafka_spark.client.records_adapter import column_offsets

STICKY = -1
"""The partition of a record that the sticky partitioner places (null key, no explicit partition)."""
_SHORT_RUN = 16  # below this many records, numpy's fixed cost per call exceeds a plain loop's


def lengths(items: Sequence[bytes | None]) -> np.ndarray:
    """len() of every item, 0 for None, as int64."""
    try:
        # Optimistic: len(None) raises the TypeError that picks the slower pass.
        return np.fromiter(map(len, cast("Sequence[bytes]", items)), dtype=np.int64, count=len(items))
    except TypeError:  # a None among them: the slower pass only then
        return np.fromiter((0 if x is None else len(x) for x in items), dtype=np.int64, count=len(items))


def key_partitions(keys: Sequence[bytes | None] | pa.Array, count: int) -> np.ndarray:
    """The Java partitioner's choice for every non-null key (``toPositive(murmur2(key)) % count``), STICKY for
    null keys (an Arrow binary column's keys hashed where they lie)."""
    if isinstance(keys, pa.Array):
        return _column_partitions(keys, count)
    try:
        # Optimistic: a None key makes murmur2_many raise TypeError.
        return _by_hash(murmur2_many(cast("Sequence[bytes]", keys)), count)
    except TypeError:  # a None among them: hash the others only
        pass
    present = [i for i, key in enumerate(keys) if key is not None]
    parts = np.full(len(keys), STICKY, dtype=np.int64)
    if present:
        parts[present] = _by_hash(murmur2_many([key for key in keys if key is not None]), count)
    return parts


def explicit_partitions(partitions: Sequence[int | None] | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The given partitions as int64 (0 where None) and a mask of the records that give one."""
    if isinstance(partitions, pa.Array):
        numbers = pc.fill_null(partitions, 0).to_numpy().astype(np.int64)
        return numbers, partitions.is_valid().to_numpy(zero_copy_only=False)
    given = np.fromiter((p is not None for p in partitions), dtype=bool, count=len(partitions))
    numbers = np.fromiter((0 if p is None else p for p in partitions), dtype=np.int64, count=len(partitions))
    return numbers, given


def first(mask: np.ndarray) -> int | None:
    """The index of the first True, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


def by_partition(parts: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """A stable order that groups records by partition, and each group's (partition, start, end) in it: the
    records of one partition keep their order, as they would with one send() each."""
    # numpy's stable sort of 16-bit integers is a radix sort: linear, ~4x faster than on int64 at 10,000 records
    order = np.argsort(parts.astype(np.int16) if len(parts) and int(parts.max()) < 1 << 15 else parts, kind="stable")
    ordered = parts[order]
    starts = np.flatnonzero(np.diff(ordered)) + 1
    bounds = [0, *starts.tolist(), len(parts)]
    return order, [(int(ordered[s]), s, e) for s, e in pairwise(bounds) if s < e]


Sums = np.ndarray | list[int]
"""``sums[i]`` = the size of a call's first i records (one more entry than records)."""


def prefix_sums(sizes: np.ndarray) -> np.ndarray:
    """``sums[i]`` = the size of the first i records (len(sizes) + 1 entries), int64: `bisect` reads the few
    entries it needs (a Python list of them cost ~20 us per thousand records, at every call)."""
    sums = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=sums[1:])
    return sums


Append = Callable[[TopicPartition, Records, Sums, int, int, Any, list[Span], bool], int]
"""`Producer._append`: records[start:stop] into a partition's batches as one send() each would."""


class TopicPlan:
    """One topic's records of a send_many() call, checked, with the topic's partition count, the records'
    partitions (STICKY: the sticky partitioner's) and their positions in the call."""

    def __init__(self, topic: str, count: int, records: Records, sizes: np.ndarray,
                 parts: np.ndarray, positions: np.ndarray) -> None:
        self.topic, self.count, self.records, self.sizes = topic, count, records, sizes
        self.parts, self.positions = parts, positions
        self._sums: np.ndarray | None = None

    def queue(self, lo: int, hi: int, append: Append, sticky_partition: Callable[[], int], spans: list[Span]) -> None:
        """Under the producer's lock: append records [lo, hi), consecutive in the call, as one send() each would."""
        parts = self.parts[lo:hi]
        sticky = parts == STICKY
        if hi - lo >= _SHORT_RUN and not sticky.any():
            # Keyed or explicit only: partitions are fixed, so grouping by partition (order kept within each) makes
            # the same batches; sealing them moves this topic's sticky partition as often as the loop would.
            order, groups = by_partition(parts)
            order += lo
            records = reordered(self.records, order)
            sums = prefix_sums(self.sizes[order])
            positions = self.positions[order]
            for partition, start, end in groups:
                append(TopicPartition(self.topic, partition), records, sums, start, end, positions, spans, False)
            return
        if self._sums is None:
            self._sums = prefix_sums(self.sizes)
        if hi - lo >= _SHORT_RUN and sticky.all():
            # Null keys: a run per sticky partition, until a sealed batch moves it on.
            i = lo
            while i < hi:
                i = append(TopicPartition(self.topic, sticky_partition()), self.records, self._sums, i, hi,
                           self.positions, spans, True)
            return
        # Null keys among others (the sticky partition depends on every seal before each), or a few records of
        # topics that alternate: record by record.
        for i, partition in enumerate(parts.tolist(), lo):
            tp = TopicPartition(self.topic, sticky_partition() if partition == STICKY else partition)
            append(tp, self.records, self._sums, i, i + 1, self.positions, spans, False)


def by_topic(topic: str | Sequence[str], count: int) -> tuple[dict[str, np.ndarray | None], list[tuple[str, int, int]]]:
    """Each topic's record positions in the call (None: all of them), and the call's runs of consecutive records of
    one topic as (topic, start, end) in that topic's own numbering: appending run by run keeps the call's order
    wherever it matters (the sticky partitioner draws every topic's choices from one random stream)."""
    if isinstance(topic, str) or (count and topic.count(topic[0]) == count):
        name = topic if isinstance(topic, str) else topic[0]
        return {name: None}, [(name, 0, count)]
    positions: dict[str, list[int]] = {}
    runs: list[tuple[str, int, int]] = []
    for i, name in enumerate(topic):
        mine = positions.setdefault(name, [])
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1], len(mine) + 1)
        else:
            runs.append((name, len(mine), len(mine) + 1))
        mine.append(i)
    return {name: np.array(p, dtype=np.int64) for name, p in positions.items()}, runs


def _column_partitions(keys: pa.Array, count: int) -> np.ndarray:
    data = keys.buffers()[2]
    data = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
    parts = _by_hash(murmur2_buffers(data, column_offsets(keys)), count)
    if keys.null_count:
        parts[keys.is_null().to_numpy(zero_copy_only=False)] = STICKY
    return parts


def _by_hash(hashes: np.ndarray, count: int) -> np.ndarray:
    return (hashes.astype(np.int64) & 0x7FFFFFFF) % count
