"""Errors about Kafka's log files: corrupt segments, indexes, checkpoints and snapshots."""

from __future__ import annotations

from kafka_spark.errors import CorruptRecordError, DecodeError


class SegmentCorruptError(CorruptRecordError):
    """A batch of a `.log` file failed its CRC or structural checks.

    `path` names the file, `position` the byte where the bad batch starts and `offset` its offset
    (the last offset read before it when the header itself is unreadable).
    """

    def __init__(self, path: str, position: int, offset: int | None, reason: str) -> None:
        where = f"offset {offset}" if offset is not None else "unknown offset"
        super().__init__(f"{path}: corrupt batch at byte {position} ({where}): {reason}", offset, position)
        self.path = path
        self.reason = reason


class IndexCorruptError(DecodeError):
    """An `.index`, `.timeindex` or `.txnindex` file that Kafka itself would reject."""


class CheckpointError(DecodeError):
    """A checkpoint text file (offsets, leader epochs) that does not parse."""


class SnapshotCorruptError(DecodeError):
    """A producer-state `.snapshot` file that fails its schema or CRC check (Kafka's message text)."""


__all__ = ["CheckpointError", "IndexCorruptError", "SegmentCorruptError", "SnapshotCorruptError"]
