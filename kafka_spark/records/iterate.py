"""Record-by-record reading: batch headers, and Record objects for tests, the CLI and log dumps.

`iter_records` applies the same rules as `decode_to_arrow` (offset range, read_committed, control
records) one Python object at a time; the vectorised decoder is checked against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafka_spark.records import batch_v2, legacy
from kafka_spark.records.arena import Arena
from kafka_spark.records.compression import DEFAULT_MAX_DECOMPRESSED
from kafka_spark.records.constants import MAGIC_V2
from kafka_spark.records.model import BatchInfo, Record
from kafka_spark.records.scan import read_entry, scan
from kafka_spark.records.transactions import AbortedTransactions, check_isolation

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class BatchScan:
    """The complete batches of a buffer and where a trailing partial batch starts (None if none)."""

    batches: list[BatchInfo]
    incomplete_at: int | None
    end: int


def scan_batches(buf: Buffer, *, verify_crc: bool = False, max_batch_size: int | None = None) -> BatchScan:
    """Read every complete batch header of `buf` (v2 batches and v0/v1 top-level messages)."""
    found = scan(buf, max_batch_size)
    batches = []
    for start, end in zip(found.starts, found.ends, strict=True):
        info = read_entry(buf, start, end)
        if verify_crc:
            verify_batch(buf, info)
        batches.append(info)
    return BatchScan(batches, found.incomplete_at, found.end)


def iter_batches(buf: Buffer, *, verify_crc: bool = False, max_batch_size: int | None = None) -> Iterator[BatchInfo]:
    """Yield the complete batch headers of `buf`; a trailing partial batch ends the iteration."""
    yield from scan_batches(buf, verify_crc=verify_crc, max_batch_size=max_batch_size).batches


def verify_batch(buf: Buffer, info: BatchInfo) -> None:
    """Raise CorruptRecordError unless the CRC of the batch (v2) or top-level message (v0/v1) matches."""
    if info.magic == MAGIC_V2:
        batch_v2.verify_crc(buf, info)
    else:
        legacy.verify_crc(buf, info.position, info.position + info.size, info.last_offset)


@dataclass(slots=True)
class Counts:
    """What a read skipped, in records: outside the offset range, aborted, control."""

    batches: int = 0
    out_of_range: int = 0
    aborted: int = 0
    control: int = 0


def iter_records(
    buf: Buffer,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    aborted: Iterable[tuple[int, int]] | None = None,
    isolation: str = "read_uncommitted",
    include_control: bool = False,
    verify_crc: bool = True,
    max_batch_size: int | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED,
) -> Iterator[Record]:
    """Yield the records of `buf` in offset order, one `Record` at a time.

    Records outside [start_offset, end_offset) are skipped; with isolation "read_committed",
    records of the `aborted` transactions [(producer_id, first_offset), ...] are too. Control
    records are yielded only with `include_control`. A trailing partial batch is ignored.
    """
    txns = AbortedTransactions(aborted) if check_isolation(isolation) else None
    yield from read_records(
        buf, start_offset, end_offset, txns, include_control, verify_crc, max_batch_size, max_decompressed_bytes,
        Counts(),
    )


def read_records(
    buf: Buffer,
    start_offset: int | None,
    end_offset: int | None,
    txns: AbortedTransactions | None,
    include_control: bool,
    verify_crc: bool,
    max_batch_size: int | None,
    limit: int,
    counts: Counts,
) -> Iterator[Record]:
    """`iter_records` with explicit transaction state, counting what it skips into `counts`."""
    lo = start_offset if start_offset is not None else -(1 << 63)
    hi = end_offset if end_offset is not None else 1 << 63
    arena = Arena(capacity=0)
    budget = limit  # decompressed bytes left for this read, across all batches
    for info in scan_batches(buf, max_batch_size=max_batch_size).batches:
        counts.batches += 1
        budget -= arena.size
        arena.reset()
        if verify_crc:
            verify_batch(buf, info)
        if info.magic != MAGIC_V2:
            for record in legacy.iter_legacy_records(buf, info, arena, budget, verify_crc):
                if lo <= record.offset < hi:
                    yield record
                else:
                    counts.out_of_range += 1
            continue
        batch_v2.check_header(info)
        n = info.count or 0
        if txns is not None and info.producer_id >= 0:
            if info.is_control:
                txns.control(info.producer_id, info.last_offset, batch_v2.control_type(buf, info, arena, budget))
            elif txns.is_aborted(info.producer_id, info.last_offset, info.is_transactional):
                counts.aborted += n
                continue
        if info.is_control and not include_control:
            counts.control += n
            continue
        if info.last_offset < lo or (info.base_offset or 0) >= hi:
            counts.out_of_range += n
            continue
        data, start, end = batch_v2.records_bytes(buf, info, arena, budget - arena.size)
        for record in batch_v2.iter_v2_records(data, start, end, info):
            if lo <= record.offset < hi:
                yield record
            else:
                counts.out_of_range += 1
