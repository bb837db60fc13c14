"""`decode_to_arrow`: a fetch response's records (or a segment chunk) into one Arrow RecordBatch.

Batch headers are read with numpy, CRCs with one call per batch, and records with the vectorised
readers; compressed batches are decompressed into a reused arena so that all records sit in one
buffer. Whenever the vectorised readers reject something, the buffer is re-read record by record
(`iterate.read_records`), which either raises the precise error or, should the two ever disagree,
still gives the right answer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kafka_spark.errors import DecodeError
from kafka_spark.records import batch_v2, legacy, vector_legacy, vector_v2
from kafka_spark.records.arena import Arena
from kafka_spark.records.arrow import record_batch, records_batch
from kafka_spark.records.columns import Columns
from kafka_spark.records.compression import DEFAULT_MAX_DECOMPRESSED, decompress_batches
from kafka_spark.records.constants import (
    CONTROL_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    TRANSACTIONAL_MASK,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
    V2_MIN_RECORD_SIZE,
    V2_MIN_SIZE,
    Compression,
)
from kafka_spark.records.crc import crc32c
from kafka_spark.records.iterate import Counts, read_records
from kafka_spark.records.scan import read_entry, scan
from kafka_spark.records.transactions import AbortedTransactions, check_isolation

Buffer = bytes | bytearray | memoryview

_HEADER_BYTES = np.arange(V2_HEADER_SIZE)
_V2_DTYPE = np.dtype(
    [
        ("base_offset", ">i8"), ("length", ">i4"), ("leader_epoch", ">i4"), ("magic", "i1"), ("crc", ">u4"),
        ("attributes", ">i2"), ("last_offset_delta", ">i4"), ("base_timestamp", ">i8"), ("max_timestamp", ">i8"),
        ("producer_id", ">i8"), ("producer_epoch", ">i2"), ("base_sequence", ">i4"), ("count", ">i4"),
    ]
)


@dataclass(frozen=True, slots=True)
class DecodeResult:
    """Records of a buffer as Arrow, and where to continue.

    `next_offset` is the offset after the last complete batch (None if there was none);
    `incomplete_at` is the byte position of a trailing partial batch (None if there is none) and
    `end` where the complete batches stop. `batches` counts complete entries (v2 batches, v0/v1
    top-level messages); the `skipped_*` counts are records not in `batch`.
    """

    batch: pa.RecordBatch
    next_offset: int | None
    incomplete_at: int | None
    end: int
    batches: int
    skipped_out_of_range: int
    skipped_aborted: int
    skipped_control: int

    @property
    def records_skipped(self) -> int:
        return self.skipped_out_of_range + self.skipped_aborted + self.skipped_control


@dataclass(frozen=True, slots=True)
class _Options:
    lo: int | None
    hi: int | None
    committed: bool
    aborted: tuple[tuple[int, int], ...]
    include_headers: bool
    verify: bool
    max_batch_size: int | None
    limit: int
    views: bool


class _Invalid(Exception):
    """A vectorised check failed; the record-by-record reader will say precisely why."""


@dataclass(slots=True)
class _V2Run:
    """Consecutive v2 batches to decode (already filtered), with their codecs."""

    batches: vector_v2.BatchArrays
    codec: np.ndarray

    def compressed(self, u8: np.ndarray) -> bool:
        return bool((self.codec != 0).any())


@dataclass(slots=True)
class _LegacyRun:
    """Consecutive v0/v1 top-level messages [starts[i], ends[i])."""

    starts: np.ndarray
    ends: np.ndarray

    def compressed(self, u8: np.ndarray) -> bool:
        return bool((u8[self.starts + 17] & 0x07).any())


class Decoder:
    """Decodes buffers to Arrow, reusing its decompression arena across calls (not thread-safe)."""

    def __init__(self, arena: Arena | None = None) -> None:
        self.arena = arena or Arena()

    def decode(
        self,
        buf: Buffer,
        topic: str,
        partition: int,
        *,
        start_offset: int | None = None,
        end_offset: int | None = None,
        aborted: Iterable[tuple[int, int]] | None = None,
        isolation: str = "read_uncommitted",
        include_headers: bool = False,
        verify_crc: bool = True,
        max_batch_size: int | None = None,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED,
        views: bool = False,
    ) -> DecodeResult:
        """See `decode_to_arrow`."""
        opts = _Options(
            start_offset,
            end_offset,
            check_isolation(isolation),
            tuple((int(p), int(f)) for p, f in aborted or ()),
            include_headers,
            verify_crc,
            max_batch_size,
            max_decompressed_bytes,
            views,
        )
        mv = memoryview(buf).cast("B")
        found = scan(mv, max_batch_size)
        counts = Counts(batches=len(found.starts))
        if found.starts:
            self.arena.reset()
            try:
                batch = self._decode(mv, found.starts, found.ends, topic, partition, opts, counts)
            except _Invalid:
                counts = Counts()
                batch = self._slow(mv, topic, partition, opts, counts)
            finally:
                self.arena.reset()
            next_offset: int | None = read_entry(mv, found.starts[-1], found.ends[-1]).next_offset
        else:
            next_offset = None
            batch = record_batch(Columns.empty(), pa.py_buffer(b""), topic, partition, include_headers)
        return DecodeResult(
            batch, next_offset, found.incomplete_at, found.end, counts.batches, counts.out_of_range,
            counts.aborted, counts.control,
        )

    def _slow(self, mv: memoryview, topic: str, partition: int, opts: _Options, counts: Counts) -> pa.RecordBatch:
        txns = AbortedTransactions(opts.aborted) if opts.committed else None
        records = list(
            read_records(mv, opts.lo, opts.hi, txns, False, opts.verify, opts.max_batch_size, opts.limit, counts)
        )
        return records_batch(records, topic, partition, opts.include_headers)

    def _decode(
        self, mv: memoryview, starts: list[int], ends: list[int], topic: str, partition: int, opts: _Options,
        counts: Counts,
    ) -> pa.RecordBatch:
        u8 = np.frombuffer(mv, dtype=np.uint8)
        s = np.array(starts, dtype=np.int64)
        e = np.array(ends, dtype=np.int64)
        magic = u8[s + 16]
        if magic.max() > MAGIC_V2:  # negative magics read as 128 and up here
            raise _Invalid
        is_v2 = magic == MAGIC_V2
        runs = _runs(is_v2)
        txns = AbortedTransactions(opts.aborted) if opts.committed else None
        plan: list[_V2Run | _LegacyRun] = [
            self._plan_v2(mv, u8, s[a:b], e[a:b], opts, txns, counts) if is_v2[a] else _LegacyRun(s[a:b], e[a:b])
            for a, b in runs
        ]
        # One source buffer for all records: the input, or the arena if anything needs decompressing.
        to_arena = any(run.compressed(u8) for run in plan)
        parts = [
            self._run_v2(mv, u8, run, opts, to_arena) if isinstance(run, _V2Run)
            else self._run_legacy(mv, u8, run, opts, to_arena)
            for run in plan
        ]
        cols = Columns.concat([c for c in parts if c is not None])
        if opts.lo is not None or opts.hi is not None:
            keep = _in_range(cols.offset, opts.lo, opts.hi)
            if not keep.all():
                counts.out_of_range += int(len(keep) - np.count_nonzero(keep))
                cols = cols.take(np.flatnonzero(keep))
        source = pa.py_buffer(self.arena.view() if to_arena else mv)
        try:
            # Views only into the caller's buffer: the arena is overwritten by the next call.
            return record_batch(cols, source, topic, partition, opts.include_headers, opts.views and not to_arena)
        except ValueError:
            raise _Invalid from None

    def _plan_v2(
        self, mv: memoryview, u8: np.ndarray, s: np.ndarray, e: np.ndarray, opts: _Options,
        txns: AbortedTransactions | None, counts: Counts,
    ) -> _V2Run:
        size = e - s - V2_HEADER_SIZE
        if size.min() < V2_MIN_SIZE + LOG_OVERHEAD - V2_HEADER_SIZE:
            raise _Invalid
        h = np.frombuffer(u8[s[:, None] + _HEADER_BYTES], dtype=_V2_DTYPE)
        count = h["count"].astype(np.int64)
        attrs = h["attributes"].astype(np.int64)
        codec = attrs & 0x07
        # Negative counts, unknown codecs, or more records than uncompressed bytes can hold.
        room = np.where(codec == 0, size, np.where(codec > Compression.ZSTD, -1, 1 << 40))
        if (count * V2_MIN_RECORD_SIZE > room).any() or count.min() < 0:
            raise _Invalid
        if opts.verify:
            stored = h["crc"].astype(np.int64)
            actual = [crc32c(mv[a + V2_ATTRIBUTES_OFFSET : b]) for a, b in zip(s.tolist(), e.tolist(), strict=True)]
            if not np.array_equal(np.array(actual, dtype=np.int64), stored):
                raise _Invalid
        base = h["base_offset"].astype(np.int64)
        last = base + h["last_offset_delta"].astype(np.int64)
        control = (attrs & CONTROL_MASK) != 0
        keep = ~control
        pid = h["producer_id"].astype(np.int64)
        if txns is not None:
            transactional = (attrs & TRANSACTIONAL_MASK) != 0
            for i in np.flatnonzero((pid >= 0) & (control | transactional)).tolist():
                if control[i]:
                    txns.control(int(pid[i]), int(last[i]), self._marker(mv, int(s[i]), int(e[i]), opts))
                elif txns.is_aborted(int(pid[i]), int(last[i]), True):
                    keep[i] = False
                    counts.aborted += int(count[i])
        counts.control += int(count[control].sum())
        in_range = _batch_in_range(base, last, opts.lo, opts.hi)
        counts.out_of_range += int(count[keep & ~in_range].sum())
        keep &= in_range
        k = np.flatnonzero(keep)
        batches = vector_v2.BatchArrays(
            s[k] + V2_HEADER_SIZE, e[k], count[k], base[k], h["base_timestamp"][k].astype(np.int64),
            h["max_timestamp"][k].astype(np.int64), (attrs[k] >> 3) & 1,
        )
        return _V2Run(batches, codec[k])

    def _marker(self, mv: memoryview, start: int, end: int, opts: _Options) -> int | None:
        info = read_entry(mv, start, end)
        try:
            return batch_v2.control_type(mv, info, Arena(capacity=0), opts.limit)
        except DecodeError:
            raise _Invalid from None

    def _run_v2(self, mv: memoryview, u8: np.ndarray, run: _V2Run, opts: _Options, to_arena: bool) -> Columns | None:
        batches, codec = run.batches, run.codec
        if not len(batches.count):
            return None
        if to_arena:
            arena = self.arena
            try:
                at, end = decompress_batches(
                    codec.tolist(), mv, batches.start.tolist(), batches.end.tolist(), arena, opts.limit - arena.size
                )
            except DecodeError:
                raise _Invalid from None
            batches.start = np.array(at, dtype=np.int64)
            batches.end = np.array(end, dtype=np.int64)
            if (batches.count * V2_MIN_RECORD_SIZE > batches.end - batches.start).any():
                raise _Invalid
            source = arena.view()
        else:
            source = u8
        try:
            return vector_v2.decode(source, batches, opts.include_headers)
        except vector_v2.RecordsCorrupt:
            raise _Invalid from None

    def _run_legacy(self, mv: memoryview, u8: np.ndarray, run: _LegacyRun, opts: _Options, to_arena: bool) -> Columns:
        s, e = run.starts, run.ends
        if not to_arena:
            leaves = vector_legacy.LeafArrays.plain(s, e)
            source, verify = u8, opts.verify
        else:
            found: list[legacy.Leaf] = []
            try:
                for a, b in zip(s.tolist(), e.tolist(), strict=True):
                    info = read_entry(mv, a, b)
                    found += legacy.leaves(mv, info, self.arena, opts.limit, opts.verify, copy_plain=True)
            except DecodeError:
                raise _Invalid from None
            leaves = vector_legacy.LeafArrays.of(found)
            source, verify = self.arena.view(), False
        try:
            return vector_legacy.decode(source, leaves, verify)
        except vector_legacy.MessagesCorrupt:
            raise _Invalid from None


def _runs(is_v2: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of consecutive entries in one format (mixed after a format upgrade)."""
    first = bool(is_v2[0])
    if bool(is_v2.all()) if first else not is_v2.any():
        return [(0, len(is_v2))]
    cut = (np.flatnonzero(np.diff(is_v2.astype(np.int8))) + 1).tolist()
    return list(zip([0, *cut], [*cut, len(is_v2)], strict=True))


def _in_range(offset: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    keep = np.ones(len(offset), dtype=bool)
    if lo is not None:
        keep &= offset >= lo
    if hi is not None:
        keep &= offset < hi
    return keep


def _batch_in_range(base: np.ndarray, last: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    keep = np.ones(len(base), dtype=bool)
    if lo is not None:
        keep &= last >= lo
    if hi is not None:
        keep &= base < hi
    return keep


_local = threading.local()


def decode_to_arrow(
    buf: Buffer,
    topic: str,
    partition: int,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    aborted: Iterable[tuple[int, int]] | None = None,
    isolation: str = "read_uncommitted",
    include_headers: bool = False,
    verify_crc: bool = True,
    max_batch_size: int | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED,
    views: bool = False,
) -> DecodeResult:
    """Decode the record batches in `buf` into a RecordBatch with Spark's Kafka schema.

    Records outside [start_offset, end_offset) are dropped (a fetch returns whole batches). With
    isolation "read_committed", records of `aborted` transactions [(producer_id, first_offset)]
    are dropped; control records always are. A trailing partial batch is reported in
    `incomplete_at`, not decoded. Corrupt data raises CorruptRecordError (a DecodeError) naming
    the offset; at most `max_decompressed_bytes` are decompressed in total. With `views`, the keys and
    values of uncompressed records come as binary_view arrays into `buf` (not copied), so `buf` must not
    change while the batch is in use.
    """
    decoder = getattr(_local, "decoder", None)
    if decoder is None:
        decoder = _local.decoder = Decoder()
    return decoder.decode(
        buf, topic, partition, start_offset=start_offset, end_offset=end_offset, aborted=aborted,
        isolation=isolation, include_headers=include_headers, verify_crc=verify_crc,
        max_batch_size=max_batch_size, max_decompressed_bytes=max_decompressed_bytes, views=views,
    )


__all__ = ["DecodeResult", "Decoder", "decode_to_arrow"]
