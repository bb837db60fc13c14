"""Records of a segment as Arrow, through the same decoder as fetch responses.

Chunks of whole batches go to `Decoder.decode` in one call each (the vectorised path). If the
decoder rejects a chunk, its batches are decoded one by one to find the culprit, which is then
reported with its file and byte position, or skipped and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pyarrow as pa

from kafka_spark.errors import DecodeError
from kafka_spark.records import Decoder, DecodeResult
from kafka_spark.segments.chunks import Chunk, ScanStats
from kafka_spark.segments.errors import SegmentCorruptError
from kafka_spark.segments.segment import Segment
from kafka_spark.segments.txnindex import AbortedTxn, aborted_between, as_fetch_aborted

log = logging.getLogger(__name__)


def read_segment(
    segment: Segment,
    topic: str,
    partition: int,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    aborted: Sequence[AbortedTxn] = (),
    isolation: str = "read_uncommitted",
    include_headers: bool = False,
    verify_crc: bool = True,
    skip_corrupt: bool = False,
    stats: ScanStats | None = None,
    decoder: Decoder | None = None,
    next_offset_hint: int | None = None,
    views: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches (Spark's Kafka schema) of the records of `segment` in [start_offset, end_offset).

    Index seeks bound the bytes read to little more than the range. `aborted` are the transactions
    that may touch the range (from this and later segments' `.txnindex`), used with isolation
    "read_committed"; control records are never returned. `views`: keys and values as binary_view arrays
    into the bytes read (see `decode_to_arrow`).
    """
    stats = stats if stats is not None else ScanStats()
    decoder = decoder or Decoder()
    index = segment.offset_index()
    start = 0 if start_offset is None else index.lookup(start_offset)[1]
    stop = None
    if end_offset is not None:
        if end_offset <= (start_offset if start_offset is not None else segment.base_offset):
            return
        stop = index.upper_position(end_offset - 1)
    for chunk in _chunks(segment, start, stop, skip_corrupt, stats, next_offset_hint):
        for result in _decode_chunk(chunk, segment.path, topic, partition, start_offset, end_offset, aborted,
                                    isolation, include_headers, verify_crc, skip_corrupt, stats, decoder, views):
            stats.records += result.batch.num_rows
            if result.batch.num_rows:
                yield result.batch
        if end_offset is not None and chunk.last_offset >= end_offset - 1:
            return


def _chunks(segment: Segment, start: int, stop: int | None, skip: bool, stats: ScanStats,
            hint: int | None) -> Iterator[Chunk]:
    # An index left stale by a crash can point inside a batch: then read the segment from its start.
    chunks = segment.chunks(start, stop, skip_corrupt=skip, stats=stats, next_offset_hint=hint)
    if start == 0:
        yield from chunks
        return
    try:
        first = next(chunks, None)
    except SegmentCorruptError:
        yield from segment.chunks(0, stop, skip_corrupt=skip, stats=stats, next_offset_hint=hint)
        return
    if first is not None:
        yield first
        yield from chunks


def _decode_chunk(
    chunk: Chunk, path: str, topic: str, partition: int, lo: int | None, hi: int | None,
    aborted: Sequence[AbortedTxn], isolation: str, include_headers: bool, verify_crc: bool, skip: bool,
    stats: ScanStats, decoder: Decoder, views: bool,
) -> Iterator[DecodeResult]:
    def decode(first: int, last: int) -> DecodeResult:
        # Only transactions whose marker is not yet behind these batches, as a fetch response has.
        start = chunk.batches[first]
        begin = start.base_offset if start.base_offset is not None else start.last_offset
        txns = as_fetch_aborted(aborted_between(aborted, begin, chunk.batches[last].last_offset + 1))
        return decoder.decode(chunk.span(first, last), topic, partition, start_offset=lo, end_offset=hi,
                              aborted=txns, isolation=isolation, include_headers=include_headers,
                              verify_crc=verify_crc, views=views)

    try:
        yield decode(0, len(chunk.batches) - 1)
        return
    except DecodeError:
        pass
    for i, info in enumerate(chunk.batches):
        try:
            yield decode(i, i)
        except DecodeError as exc:
            offset = info.base_offset if info.base_offset is not None else info.last_offset
            position = chunk.position + info.position
            if not skip:
                raise SegmentCorruptError(path, position, offset, str(exc)) from None
            log.warning("skipping corrupt batch of %s at byte %d (offset %d): %s", path, position, offset, exc)
            stats.corrupt_batches += 1
            stats.skipped_bytes += info.size
            stats.skipped_offsets += info.last_offset - offset + 1


__all__ = ["read_segment"]
