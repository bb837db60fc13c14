"""Driver-side planning of a `pykafka-log` read: log dirs, one replica per partition, offsets from the
files, and tasks of whole segments or index-aligned slices of large ones.

The offsets follow the broker's: earliest is the log start, latest the high watermark (both from the
files, fixed here), a timestamp the first offset at or after it below the high watermark. Replicas
of one partition in several log dirs (a cluster's brokers) are read once, from `replicaLogDir` if it
holds the partition, else from the replica that reaches furthest (then the one that starts earliest).
"""

from __future__ import annotations

import itertools
import logging
import math
import re
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass

from kafka_spark.client.errors import UnknownTopicError
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import OffsetRange, split_ranges
from kafka_spark.offsets.resolve import pick_partitions, resolve_spec
from kafka_spark.segments import PartitionDir, PartitionLog, Segment, read_checkpoints
from kafka_spark.segments.listing import list_partition_dirs
from kafka_spark.spark.log.options import LogOptions
from kafka_spark.spark.log.store import Location, expand
from kafka_spark.spark.source.planner import check_past_the_end

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LogRange(OffsetRange):
    """Offsets [start, end) of one partition, read from the replica in log dir `log_dir` (a URI)."""

    log_dir: str = ""


@dataclass
class _Replica:
    location: Location
    log: PartitionLog


class FileOffsets:
    """`OffsetLookup` over the chosen replicas' files: log start, high watermark, timestamp seeks."""

    def __init__(self, logs: Mapping[TopicPartition, PartitionLog], ends: Mapping[TopicPartition, int]) -> None:
        self.logs = logs
        self.ends = ends

    def earliest(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.logs[tp].log_start_offset for tp in tps}

    def latest(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.ends[tp] for tp in tps}

    def for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        out: dict[TopicPartition, int | None] = {}
        for tp, ts in timestamps.items():
            if ts in (-2, -1):  # ListOffsets' sentinels, as a broker reads them
                out[tp] = self.logs[tp].log_start_offset if ts == -2 else self.ends[tp]
                continue
            if ts < 0:
                raise ConfigError(f"{tp}: timestamp {ts} is not supported by pykafka-log (only -2 for earliest "
                                  "and -1 for latest among negative values)")
            found = self.logs[tp].offset_for_timestamp(ts)
            # A broker answers only with offsets below the high watermark.
            out[tp] = found if found is not None and found < self.ends[tp] else None
        return out


@dataclass(frozen=True)
class PartitionBounds:
    """A partition's offsets in the files: its log start (`earliest`), where the read's starting offsets
    resolve (`start`) and the end a read stops at (`end`: the high watermark, or under read_committed the
    last stable offset)."""

    earliest: int
    start: int
    end: int


def plan_log_batch(options: LogOptions) -> list[LogRange]:
    """The tasks of a batch read over `options.paths`."""
    src = options.source
    with ExitStack() as stack:
        chosen, lookup = _selected(options, stack)
        tps = list(chosen)
        starts = resolve_spec(lookup, src.starting, tps, True, src.no_match_strategy)
        stops = resolve_spec(lookup, src.ending, tps, False, src.no_match_strategy)
        bounds = {tp: (starts[tp], stops[tp]) for tp in tps}
        if src.ending.kind == "offsets":
            check_past_the_end(bounds, lookup.ends, src.fail_on_data_loss)
        pieces: list[LogRange] = []
        for tp, (start, end) in bounds.items():
            if start > end:
                raise ConfigError(f"{tp}: the starting offset {start} is after the ending offset {end}")
            pieces += _segment_pieces(chosen[tp], start, end, options.task_bytes)
    return split_ranges(pieces, src.min_partitions, src.max_records_per_partition)


def partition_bounds(options: LogOptions) -> dict[TopicPartition, PartitionBounds]:
    """The offsets in the files of every partition the read selects, chosen as `plan_log_batch` chooses them."""
    src = options.source
    with ExitStack() as stack:
        chosen, lookup = _selected(options, stack)
        tps = list(chosen)
        starts = resolve_spec(lookup, src.starting, tps, True, src.no_match_strategy)
        earliest = lookup.earliest(tps)
        return {tp: PartitionBounds(earliest[tp], starts[tp], lookup.ends[tp]) for tp in tps}


def _selected(options: LogOptions, stack: ExitStack) -> tuple[dict[TopicPartition, _Replica], FileOffsets]:
    """The replica read for each partition the options select (open until `stack` closes) and their offsets."""
    dirs = _log_dirs(options)
    replicas = _replicas(dirs, stack)
    on_disk = sorted(replicas)
    topics = sorted({tp.topic for tp in on_disk})
    src = options.source

    def partitions_of(topic: str) -> list[TopicPartition]:
        found = [tp for tp in on_disk if tp.topic == topic]
        if not found:
            raise UnknownTopicError(f"topic {topic!r} is in none of the log dirs {', '.join(d.uri for d in dirs)}")
        return found

    def matching(pattern: str) -> list[str]:
        # As a cluster's subscribePattern: a regex search, internal topics left out.
        return [t for t in topics if not t.startswith("__") and re.search(pattern, t)]

    tps = pick_partitions(partitions_of, matching, src.subscribe, src.pattern, src.assign)
    chosen = {tp: _choose(tp, replicas[tp], options.replica_dir) for tp in tps}
    logs = {tp: r.log for tp, r in chosen.items()}
    # Any replica's checkpointed high watermark was the partition's at some point; the chosen
    # replica reaches at least as far unless the user named a shorter one.
    ends = {tp: min(max(r.log.high_watermark for r in replicas[tp]), logs[tp].log_end_offset) for tp in tps}
    if options.isolation == "read_committed":
        # As a broker answers read_committed ListOffsets: nothing at or past an open transaction.
        ends = {tp: logs[tp].stable_offset_below(end) for tp, end in ends.items()}
    return chosen, FileOffsets(logs, ends)


def _log_dirs(options: LogOptions) -> list[Location]:
    dirs: dict[str, Location] = {}
    for pattern in options.paths:
        found = expand(pattern, options.store)
        if not found:
            raise ConfigError(f"option 'path': no directory matches {pattern!r}")
        dirs.update((d.uri.rstrip("/"), d) for d in found)
    if options.replica_dir is not None and options.replica_dir.rstrip("/") not in dirs:
        raise ConfigError(f"option 'replicaLogDir': {options.replica_dir!r} is not one of the log dirs of 'path' "
                          f"({', '.join(dirs)})")
    return list(dirs.values())


def _replicas(dirs: list[Location], stack: ExitStack) -> dict[TopicPartition, list[_Replica]]:
    out: dict[TopicPartition, list[_Replica]] = {}
    for d in dirs:
        try:
            found: list[PartitionDir] = list_partition_dirs(d.storage, d.path)
        except (FileNotFoundError, NotADirectoryError):
            raise ConfigError(f"option 'path': {d.uri!r} is not a directory") from None
        if not found:
            continue
        checkpoints = read_checkpoints(d.storage, d.path)
        for p in found:
            part = d.child(f"{p.topic}-{p.partition}")
            opened = PartitionLog.open(part.path, filesystem=d.filesystem, checkpoints=checkpoints)
            stack.callback(opened.close)
            out.setdefault(TopicPartition(p.topic, p.partition), []).append(_Replica(d, opened))
    return out


def _choose(tp: TopicPartition, replicas: list[_Replica], named: str | None) -> _Replica:
    if named is not None:
        for r in replicas:
            if r.location.uri.rstrip("/") == named.rstrip("/"):
                return r
    best = max(replicas, key=lambda r: (r.log.log_end_offset, -r.log.log_start_offset))
    if len(replicas) > 1:
        log.info("%s: %d replicas; reading the one in %s", tp, len(replicas), best.location.uri)
    return best


def _segment_pieces(replica: _Replica, start: int, end: int, task_bytes: int) -> list[LogRange]:
    """[start, end) cut at segment boundaries: consecutive small segments together up to `task_bytes`,
    a larger segment in slices that start at offset-index entries."""
    plog, uri = replica.log, replica.location.uri
    if end <= start or not plog.segments:
        return []
    segments = plog.segments_for(start, end)
    bounds = [s.base_offset for s in segments[1:]] + [end]
    out: list[LogRange] = []
    lo, acc = start, 0
    for seg, seg_end in zip(segments, bounds, strict=True):
        seg_start = max(start, seg.base_offset)
        if seg.size > task_bytes:
            if acc:
                out.append(LogRange(plog.topic, plog.partition, lo, seg_start, log_dir=uri))
            out += [LogRange(plog.topic, plog.partition, a, b, log_dir=uri)
                    for a, b in _slices(seg, seg_start, min(end, seg_end), task_bytes)]
            lo, acc = min(end, seg_end), 0
            continue
        if acc and acc + seg.size > task_bytes:
            out.append(LogRange(plog.topic, plog.partition, lo, seg_start, log_dir=uri))
            lo, acc = seg_start, 0
        acc += seg.size
    if lo < end and acc:
        out.append(LogRange(plog.topic, plog.partition, lo, end, log_dir=uri))
    return [r for r in out if r.end > r.start]


def _slices(seg: Segment, start: int, end: int, task_bytes: int) -> Iterator[tuple[int, int]]:
    """[start, end) of one large segment in about size/task_bytes parts whose cuts fall where an
    offset-index entry starts a chunk, so each part's seek lands on its first batch."""
    index = seg.offset_index()
    parts = math.ceil(seg.size / task_bytes)
    cuts: list[int] = []
    for k in range(1, parts):
        j = int(index.positions.searchsorted(seg.size * k // parts))
        # Entry j's chunk starts right after the chunk that entry j-1 ends with.
        if 1 <= j < len(index):
            cut = int(index.offsets[j - 1]) + 1
            if start < cut < end and (not cuts or cut > cuts[-1]):
                cuts.append(cut)
    edges = [start, *cuts, end]
    yield from itertools.pairwise(edges)


__all__ = ["FileOffsets", "LogRange", "PartitionBounds", "partition_bounds", "plan_log_batch"]
