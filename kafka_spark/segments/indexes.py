"""`.index` (offset → byte position) and `.timeindex` (timestamp → offset) files.

Both are arrays of fixed-size big-endian slots with no header. A file the broker still writes to
is preallocated with zeros, and nothing on disk says how many slots are real; Kafka's own rule
(and DumpLogSegments') is that a slot after the first whose relative offset is 0 ends the data.
For seeking, a reader must also distrust slots that go backwards or point past the `.log` it has
(a torn entry of a live broker), so `offset_index`/`time_index` keep only the trustworthy prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_spark.segments.errors import IndexCorruptError

OFFSET_SLOT = 8
TIME_SLOT = 12
_OFFSET_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
_TIME_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
NO_TIMESTAMP = -1

Buffer = bytes | bytearray | memoryview


def offset_slots(data: Buffer) -> np.ndarray:
    """Every whole 8-byte slot of an `.index` file (fields `relative_offset`, `position`)."""
    return np.frombuffer(data, dtype=_OFFSET_DTYPE, count=len(data) // OFFSET_SLOT)


def time_slots(data: Buffer) -> np.ndarray:
    """Every whole 12-byte slot of a `.timeindex` file (fields `timestamp`, `relative_offset`)."""
    return np.frombuffer(data, dtype=_TIME_DTYPE, count=len(data) // TIME_SLOT)


def kafka_entries(relative_offsets: np.ndarray) -> int:
    """How many slots Kafka's tools treat as entries: slot 0, then up to the next relative offset 0."""
    if len(relative_offsets) <= 1:
        return len(relative_offsets)
    zeros = np.flatnonzero(relative_offsets[1:] == 0)
    return int(zeros[0]) + 1 if len(zeros) else len(relative_offsets)


def ends_entries(relative_offsets: np.ndarray) -> bool:
    """Whether the slots at a file's start reach past what `kafka_entries` counts (a relative offset 0 after slot
    0): nothing after them changes the entries."""
    return kafka_entries(relative_offsets) < len(relative_offsets)


def _trusted(relative: np.ndarray, *, strict: bool, positions: np.ndarray | None = None,
             log_size: int | None = None) -> int:
    """Length of the prefix that only moves forward (and stays inside the log)."""
    n = kafka_entries(relative)
    rel = relative[:n].astype(np.int64)
    bad = rel < 0
    if n > 1:
        step = np.diff(rel)
        bad[1:] |= (step <= 0) if strict else (step < 0)
    if positions is not None:
        pos = positions[:n].astype(np.int64)
        bad |= pos < 0
        if log_size is not None:
            bad |= pos >= max(log_size, 1)
        if n > 1:
            bad[1:] |= np.diff(pos) <= 0
    first = np.flatnonzero(bad)
    return int(first[0]) if len(first) else n


def _last_at_or_below(keys: np.ndarray, target: int) -> int:
    """The slot Kafka's index lookups pick: the last key ≤ target, -1 if there is none."""
    return int(np.searchsorted(keys, target, side="right")) - 1


@dataclass(frozen=True)
class OffsetIndex:
    """The trustworthy entries of an `.index`: absolute `offsets` and their byte `positions`."""

    base_offset: int
    offsets: np.ndarray
    positions: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below `offset`, else (base offset, 0).

        The position is where a chunk of batches starts whose last offset is the entry's offset;
        the batch holding `offset` is found by scanning forward from there.
        """
        i = _last_at_or_below(self.offsets, offset)
        return (self.base_offset, 0) if i < 0 else (int(self.offsets[i]), int(self.positions[i]))

    def upper_position(self, offset: int) -> int | None:
        """A byte position before which every record with an offset ≤ `offset` lies (None: the end).

        The chunk at entry j ends with offset `offsets[j]`, so once that reaches `offset`, entry j+1
        starts past everything wanted.
        """
        j = int(np.searchsorted(self.offsets, offset, side="left"))
        return int(self.positions[j + 1]) if j + 1 < len(self.positions) else None


@dataclass(frozen=True)
class TimeIndex:
    """The trustworthy entries of a `.timeindex`: increasing `timestamps` and the absolute `offsets`."""

    base_offset: int
    timestamps: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with a timestamp ≤ `timestamp`, else (-1, base offset)."""
        i = _last_at_or_below(self.timestamps, timestamp)
        return (NO_TIMESTAMP, self.base_offset) if i < 0 else (int(self.timestamps[i]), int(self.offsets[i]))


def offset_index(data: Buffer, base_offset: int, log_size: int | None = None) -> OffsetIndex:
    """Parse an `.index`, keeping the entries that can be trusted for seeks into a log of `log_size`."""
    slots = offset_slots(data)
    n = _trusted(slots["relative_offset"], strict=True, positions=slots["position"], log_size=log_size)
    rel = slots["relative_offset"][:n].astype(np.int64)
    return OffsetIndex(base_offset, rel + base_offset, slots["position"][:n].astype(np.int64))


def time_index(data: Buffer, base_offset: int) -> TimeIndex:
    """Parse a `.timeindex`, keeping the entries whose timestamps increase and offsets do not fall."""
    slots = time_slots(data)
    rel = slots["relative_offset"]
    n = _trusted(rel, strict=False)
    ts = slots["timestamp"][:n].astype(np.int64)
    if n > 1:
        back = np.flatnonzero(np.diff(ts) <= 0)
        if len(back):
            n = int(back[0]) + 1
    return TimeIndex(base_offset, ts[:n], rel[:n].astype(np.int64) + base_offset)


def check_offset_index(data: Buffer, base_offset: int, path: str) -> None:
    """Kafka's sanity check of an `.index` (the one that decides whether a broker rebuilds it)."""
    if len(data) % OFFSET_SLOT:
        raise IndexCorruptError(
            f"Index file {path} is corrupt, found {len(data)} bytes which is neither positive nor a multiple of 8"
        )
    slots = offset_slots(data)
    if len(slots) and int(slots["relative_offset"][-1]) + base_offset < base_offset:
        last = int(slots["relative_offset"][-1]) + base_offset
        raise IndexCorruptError(
            f"Corrupt index found, index file ({path}) has non-zero size but the last offset is {last} which is "
            f"less than the base offset {base_offset}."
        )


def check_time_index(data: Buffer, base_offset: int, path: str) -> None:
    """Kafka's sanity check of a `.timeindex` (a live, untrimmed one fails it: its last slot is zeros)."""
    slots = time_slots(data)
    if len(slots):
        first, last = int(slots["timestamp"][0]), int(slots["timestamp"][-1])
        last_offset = int(slots["relative_offset"][-1]) + base_offset
        if last < first:
            raise IndexCorruptError(
                f"Corrupt time index found, time index file ({path}) has non-zero size but the last timestamp is "
                f"{last} which is less than the first timestamp {first}"
            )
        if last_offset < base_offset:
            raise IndexCorruptError(
                f"Corrupt time index found, time index file ({path}) has non-zero size but the last offset is "
                f"{last_offset} which is less than the first offset {base_offset}"
            )
    if len(data) % TIME_SLOT:
        raise IndexCorruptError(
            f"Time index file {path} is corrupt, found {len(data)} bytes which is not positive or not a multiple "
            "of 12."
        )


__all__ = [
    "OffsetIndex", "TimeIndex", "check_offset_index", "check_time_index", "ends_entries", "kafka_entries",
    "offset_index", "offset_slots", "time_index", "time_slots",
]
