"""Listing a log directory: partition directories, and the segments and leftovers inside one.

A name-only step: nothing here opens a file. Files with a `.deleted` suffix (retention or
compaction in progress) and `.cleaned` ones (a compaction not yet swapped in) are left out;
`.swap` segments are reported apart, because whether they replace others depends on their content.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_spark.segments import names
from kafka_spark.segments.storage import Storage


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """The files of one segment; index files may be missing (created lazily, or removed)."""

    base_offset: int
    log: str
    index: str | None = None
    time_index: str | None = None
    txn_index: str | None = None
    swap: bool = False


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """A `<topic>-<partition>` directory of a log dir."""

    log_dir: str
    path: str
    topic: str
    partition: int


@dataclass(frozen=True)
class SegmentListing:
    """The segments of a partition directory in base-offset order, and its `.swap` segments apart.

    `min_cleaned` is the smallest base offset of a `.cleaned` file (a compaction in progress), if any;
    `snapshots` maps each producer-state `.snapshot` file's offset to its path.
    """

    segments: list[SegmentFiles]
    swaps: list[SegmentFiles] = field(default_factory=list)
    min_cleaned: int | None = None
    snapshots: dict[int, str] = field(default_factory=dict)


def list_partition_dirs(storage: Storage, log_dir: str, include_internal: bool = False) -> list[PartitionDir]:
    """The partition directories of `log_dir`, sorted by topic and partition."""
    out = []
    for entry in storage.list(log_dir):
        if not entry.is_dir:
            continue
        parsed = names.parse_partition_dir(entry.name, include_internal)
        if parsed is not None:
            out.append(PartitionDir(log_dir, storage.join(log_dir, entry.name), *parsed))
    return sorted(out, key=lambda p: (p.topic, p.partition))


def list_segments(storage: Storage, partition_dir: str) -> SegmentListing:
    """The segments of one partition directory (see the module doc for what is left out)."""
    files = {e.name for e in storage.list(partition_dir) if not e.is_dir}
    segments: list[SegmentFiles] = []
    swaps: list[SegmentFiles] = []
    min_cleaned: int | None = None
    snapshots: dict[int, str] = {}
    for name in sorted(files):
        if name.endswith(names.SNAPSHOT) and name.split(".", 1)[0].isdigit():
            snapshots[names.offset_from_name(name)] = storage.join(partition_dir, name)
            continue
        if name.endswith(names.CLEANED):
            try:
                base = names.offset_from_name(name)
            except ValueError:
                continue
            min_cleaned = base if min_cleaned is None else min(min_cleaned, base)
            continue
        m = names.SEGMENT_NAME.match(name)
        suffix = ""
        if m is None:
            m = names.SWAP_NAME.match(name)
            suffix = names.SWAP
        if m is None:
            continue
        base = int(m.group(1))

        def sibling(ext: str, base: int = base, suffix: str = suffix) -> str | None:
            other = names.segment_file_name(base, ext) + suffix
            return storage.join(partition_dir, other) if other in files else None

        seg = SegmentFiles(base, storage.join(partition_dir, name), sibling(names.INDEX), sibling(names.TIME_INDEX),
                           sibling(names.TXN_INDEX), bool(suffix))
        (swaps if suffix else segments).append(seg)
    return SegmentListing(segments, swaps, min_cleaned, snapshots)


__all__ = ["PartitionDir", "SegmentFiles", "SegmentListing", "list_partition_dirs", "list_segments"]
