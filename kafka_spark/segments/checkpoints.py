"""Checkpoint text files: per-log-dir offsets (recovery point, high watermark, log start, cleaner)
and a partition's leader-epoch file.

The layout is a version line, a count line, then one entry per line; Kafka writes them through a
`.tmp` file and a rename, so a reader sees either the old or the new file whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_spark.segments.errors import CheckpointError

RECOVERY_POINT = "recovery-point-offset-checkpoint"
HIGH_WATERMARK = "replication-offset-checkpoint"
LOG_START = "log-start-offset-checkpoint"
CLEANER = "cleaner-offset-checkpoint"
LEADER_EPOCH = "leader-epoch-checkpoint"
CHECKPOINT_FILES = (RECOVERY_POINT, HIGH_WATERMARK, LOG_START, CLEANER)


def _entries(text: str, path: str, parts: int) -> list[list[str]]:
    lines = text.split("\n")
    if not text.strip():
        return []
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise CheckpointError(f"Malformed line in checkpoint file [{path}]: {lines[0]}") from None
    if version != 0:
        raise CheckpointError(f"Unrecognised version:{version}, expected version: 0 in checkpoint file at: {path}")
    if len(lines) < 2 or not lines[1].strip():
        return []
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CheckpointError(f"Malformed line in checkpoint file [{path}]: {lines[1]}") from None
    out = []
    for line in lines[2:]:
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != parts:
            raise CheckpointError(f"Malformed line in checkpoint file [{path}]: {line}")
        out.append(fields)
    if len(out) != count:
        raise CheckpointError(f"Expected [{count}] entries in checkpoint file [{path}], but found only [{len(out)}]")
    return out


def parse_offset_checkpoint(text: str, path: str = "<checkpoint>") -> dict[tuple[str, int], int]:
    """`{(topic, partition): offset}` of a log-dir checkpoint file."""
    out = {}
    for topic, partition, offset in _entries(text, path, 3):
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CheckpointError(f"Malformed line in checkpoint file [{path}]: {topic} {partition} {offset}") from None
    return out


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """A leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


def parse_leader_epochs(text: str, path: str = "<leader-epoch-checkpoint>") -> list[EpochEntry]:
    """The entries of a partition's `leader-epoch-checkpoint`."""
    try:
        return [EpochEntry(int(e), int(o)) for e, o in _entries(text, path, 2)]
    except ValueError:
        raise CheckpointError(f"Malformed line in checkpoint file [{path}]") from None


__all__ = [
    "CHECKPOINT_FILES", "CLEANER", "HIGH_WATERMARK", "LEADER_EPOCH", "LOG_START", "RECOVERY_POINT", "EpochEntry",
    "parse_leader_epochs", "parse_offset_checkpoint",
]
