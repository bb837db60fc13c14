"""Executor-side reading of one `pykafka-log` task: offsets [start, end) of one partition's files.

The range was fixed at planning. On a live broker, retention may delete the range's first segments
before the task reads them: that is data loss, an error under `failOnDataLoss` (naming the partition,
the offsets and the log dir) or a warning after which the task goes on from the first offset still
on disk, never reading an offset twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafka_spark.errors import DataLossError
from kafka_spark.segments import PartitionLog, ScanStats
from kafka_spark.spark.log.options import LogOptions
from kafka_spark.spark.log.planner import LogRange
from kafka_spark.spark.log.store import locate
from kafka_spark.spark.worker_setup import prepare_worker

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

# Reopen the partition at most this often after files vanished mid-read (each retry starts further on).
_REOPENS = 3


def read_log_range(options: LogOptions, r: LogRange, stats: ScanStats | None = None,
                   views: bool = False) -> Iterator[pa.RecordBatch]:
    """Arrow batches (Spark's Kafka schema) of [r.start, r.end); `stats` receives what was read and skipped.
    `views`: keys and values as binary_view arrays (for a direct write, never for Spark)."""
    prepare_worker()
    stats = stats if stats is not None else ScanStats()
    position = r.start  # the next offset this task owes
    for _ in range(_REOPENS):
        try:
            plog = _open(options, r)
        except FileNotFoundError:
            _lost(options, r, position, r.end, "its directory is gone")
            return
        with plog:
            if plog.log_start_offset > position:
                first = min(plog.log_start_offset, r.end)
                _lost(options, r, position, first, "retention or a deletion moved the log start past them")
                position = first
            if position >= r.end:
                break
            try:
                for batch in plog.read(position, r.end, isolation=options.isolation,
                                       include_headers=options.source.include_headers,
                                       skip_corrupt=options.skip_corrupt, stats=stats, views=views):
                    position = batch.column("offset")[-1].as_py() + 1
                    yield batch
                break
            except DataLossError as exc:
                # A segment went away under the reader: whatever still exists is found by reopening.
                if options.source.fail_on_data_loss:
                    raise _error(r, position, r.end, str(exc)) from None
                log.warning("%s-%d: %s; looking for offsets from %d again", r.topic, r.partition, exc, position)
    else:
        _lost(options, r, position, r.end, f"its files vanished {_REOPENS} times while being read")
    if stats.corrupt_batches:
        log.warning("%s-%d [%d, %d) in %s: skipped %d corrupt batches (%d bytes, %d offsets)", r.topic, r.partition,
                    r.start, r.end, r.log_dir, stats.corrupt_batches, stats.skipped_bytes, stats.skipped_offsets)


def _open(options: LogOptions, r: LogRange) -> PartitionLog:
    part = locate(r.log_dir, options.store).child(f"{r.topic}-{r.partition}")
    return PartitionLog.open(part.path, filesystem=part.filesystem)


def _error(r: LogRange, start: int, end: int, why: str) -> DataLossError:
    return DataLossError(
        f"Could not read records in offset [{start}, {end}) for topic partition {r.topic}-{r.partition} from "
        f"{r.log_dir}: {why}. Some data may have been lost because they are not available in the log any more; "
        "set failOnDataLoss=false to skip them and read what is left.")


def _lost(options: LogOptions, r: LogRange, start: int, end: int, why: str) -> None:
    if start >= end:
        return
    if options.source.fail_on_data_loss:
        raise _error(r, start, end, why)
    log.warning("%s-%d: offsets [%d, %d) are no longer in %s (%s); skipping them", r.topic, r.partition, start, end,
                r.log_dir, why)


__all__ = ["read_log_range"]
