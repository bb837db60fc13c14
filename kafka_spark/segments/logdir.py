"""A broker log directory: its offset checkpoint files and its partitions."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_spark.segments import checkpoints as ckpt
from kafka_spark.segments.listing import PartitionDir, list_partition_dirs
from kafka_spark.segments.storage import Storage, resolve

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class LogDirCheckpoints:
    """The per-partition offsets a log dir's checkpoint files hold (empty where a file is missing).

    `high_watermarks` come from replication-offset-checkpoint, refreshed every few seconds while the
    broker runs, so they are a lower bound on a live broker.
    """

    recovery_points: dict[TopicPartitionKey, int] = field(default_factory=dict)
    high_watermarks: dict[TopicPartitionKey, int] = field(default_factory=dict)
    log_start_offsets: dict[TopicPartitionKey, int] = field(default_factory=dict)
    cleaner_offsets: dict[TopicPartitionKey, int] = field(default_factory=dict)


def read_bytes(storage: Storage, path: str) -> bytes | None:
    """A small file's content, None if it does not exist."""
    try:
        source = storage.open(path)
    except FileNotFoundError:
        return None
    try:
        return source.read(0, source.size)
    finally:
        source.close()


def read_text(storage: Storage, path: str) -> str | None:
    """A small text file's content, None if it does not exist."""
    data = read_bytes(storage, path)
    return None if data is None else data.decode("utf-8")


def read_checkpoints(storage: Storage, log_dir: str) -> LogDirCheckpoints:
    """Parse the checkpoint files at the root of `log_dir`."""
    parsed = []
    for name in (ckpt.RECOVERY_POINT, ckpt.HIGH_WATERMARK, ckpt.LOG_START, ckpt.CLEANER):
        path = storage.join(log_dir, name)
        text = read_text(storage, path)
        parsed.append(ckpt.parse_offset_checkpoint(text, path) if text is not None else {})
    return LogDirCheckpoints(*parsed)


def list_partitions(path: str, *, filesystem: object | None = None,
                    include_internal: bool = False) -> list[PartitionDir]:
    """The partition directories of a log dir (local path, URI, or a path of `filesystem`)."""
    storage, inner = resolve(path, filesystem)
    return list_partition_dirs(storage, inner, include_internal)


__all__ = ["LogDirCheckpoints", "list_partitions", "read_checkpoints", "read_text"]
