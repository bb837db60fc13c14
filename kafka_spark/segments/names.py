"""File and directory names of a Kafka log directory, and which of them a reader must ignore."""

from __future__ import annotations

import re

LOG = ".log"
INDEX = ".index"
TIME_INDEX = ".timeindex"
TXN_INDEX = ".txnindex"
SNAPSHOT = ".snapshot"
# Kafka appends these to a complete file name while it deletes or compacts segments.
DELETED = ".deleted"
CLEANED = ".cleaned"
SWAP = ".swap"

SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
SWAP_NAME = re.compile(r"^(\d{20})\.log\.swap$")
# Replicas being deleted, moved between log dirs or left over by KRaft carry ".<uuid>-<tag>".
_TAGGED_DIR = re.compile(r"\.[0-9a-f]{32}-(delete|future|stray)$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
# Directories the broker keeps next to partitions but that hold no topic data for users.
INTERNAL_DIRS = ("remote-log-index-cache",)
METADATA_TOPIC = "__cluster_metadata"


def segment_file_name(base_offset: int, suffix: str) -> str:
    """`<20-digit base offset><suffix>`, as Kafka names segment and index files."""
    return f"{base_offset:020d}{suffix}"


def offset_from_name(name: str) -> int:
    """The offset a file name starts with (the part before the first dot); ValueError if none."""
    head = name.split(".", 1)[0]
    if not head.isdigit():
        raise ValueError(f"{name!r} does not start with an offset")
    return int(head)


def parse_partition_dir(name: str, include_internal: bool = False) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory name; None for anything a reader must skip.

    Skipped: replicas tagged `-delete`, `-future` or `-stray`, the tiered-storage index cache, the
    KRaft metadata log (unless `include_internal`) and names that are not `<topic>-<number>`.
    """
    if _TAGGED_DIR.search(name) or name in INTERNAL_DIRS:
        return None
    m = _PARTITION_DIR.match(name)
    if m is None:
        return None
    topic = m.group(1)
    if topic == METADATA_TOPIC and not include_internal:
        return None
    return topic, int(m.group(2))


__all__ = [
    "CLEANED", "DELETED", "INDEX", "LOG", "SNAPSHOT", "SWAP", "TIME_INDEX", "TXN_INDEX", "offset_from_name",
    "parse_partition_dir", "segment_file_name",
]
