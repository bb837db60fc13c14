"""Plain value types: batch headers, decoded records and records to encode."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_spark.records.constants import (
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    MAGIC_V2,
    NO_SEQUENCE,
    TRANSACTIONAL_MASK,
    ControlType,
)

Headers = tuple[tuple[str, bytes | None], ...]

_INT32_MAX = 0x7FFFFFFF


def wrap64(x: int) -> int:
    """Java long arithmetic: wrap an int to a signed 64-bit value."""
    return ((x + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def increment_sequence(base: int, delta: int) -> int:
    """Kafka's sequence arithmetic: sequences wrap from INT32_MAX to 0."""
    if base > _INT32_MAX - delta:
        return delta - (_INT32_MAX - base) - 1
    return base + delta


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """One entry of a log: a v2 record batch, or a v0/v1 message (possibly a compressed wrapper).

    `position` and `size` locate the entry in the scanned buffer (`size` includes the 12-byte
    offset/length prefix). `base_offset` is None for a v0/v1 compressed wrapper, whose first
    offset is only known after decompression; `count` is None there for the same reason.
    """

    position: int
    size: int
    magic: int
    base_offset: int | None
    last_offset: int
    count: int | None
    crc: int
    attributes: int
    compression: int
    timestamp_type: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    partition_leader_epoch: int = -1

    @property
    def next_offset(self) -> int:
        """The offset after this entry (what the next fetch should ask for)."""
        return self.last_offset + 1

    @property
    def is_transactional(self) -> bool:
        return self.magic >= MAGIC_V2 and bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= MAGIC_V2 and bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record, as DumpLogSegments prints it (-1 without sequences)."""
        if self.base_sequence == NO_SEQUENCE or self.base_offset is None:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon set by the log cleaner (KIP-534), if any."""
        if self.magic >= MAGIC_V2 and self.attributes & DELETE_HORIZON_MASK:
            return self.base_timestamp
        return None


@dataclass(frozen=True, slots=True)
class ControlMarker:
    """The decoded key/value of a control record (transaction end marker)."""

    type: int
    version: int
    coordinator_epoch: int | None

    @property
    def name(self) -> str:
        """The control type's name ("COMMIT", "ABORT", "LEADER_CHANGE", ...), or "UNKNOWN"."""
        try:
            return ControlType(self.type).name
        except ValueError:
            return "UNKNOWN"


@dataclass(frozen=True, slots=True)
class Record:
    """A decoded record with the fields Kafka's consumer (and DumpLogSegments) shows.

    `timestamp` is in milliseconds (-1 for magic v0, which has none); `timestamp_type` follows
    `TimestampType`. `batch` is the enclosing batch (for v0/v1: the top-level message).
    """

    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    batch: BatchInfo
    sequence: int = NO_SEQUENCE

    @property
    def is_control(self) -> bool:
        return self.batch.is_control

    @property
    def control(self) -> ControlMarker | None:
        """The transaction marker of a control record; None for data records or unknown keys."""
        if not self.batch.is_control or self.key is None or len(self.key) < 4:
            return None
        version = int.from_bytes(self.key[0:2], "big", signed=True)
        kind = int.from_bytes(self.key[2:4], "big", signed=True)
        epoch = None
        if self.value is not None and len(self.value) >= 6:
            epoch = int.from_bytes(self.value[2:6], "big", signed=True)
        return ControlMarker(kind, version, epoch)


@dataclass(frozen=True, slots=True)
class RecordData:
    """A record to encode: key, value, headers and a timestamp (ms; None = now)."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Headers | list[tuple[str, bytes | None]] = field(default=())
    timestamp: int | None = None

