"""Producer-state `.snapshot` files: the idempotent/transactional producers a broker knew at a roll.

Layout: version int16 (1), CRC-32C (uint32) of everything after it and the count, int32 count,
then 46-byte entries. Error messages follow Kafka's, since `dump-log` prints them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_spark.records.crc import crc32c
from kafka_spark.segments.errors import SnapshotCorruptError

_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
_INT32_MAX = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    """One producer's state; `last_offset` < 0 means the broker kept no batch metadata for it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int | None

    @property
    def first_sequence(self) -> int:
        """Sequence of the first record of the last batch (sequences wrap at INT32_MAX)."""
        if self.last_sequence < self.offset_delta:
            return _INT32_MAX - (self.offset_delta - self.last_sequence) + 1
        return self.last_sequence - self.offset_delta


def read_snapshot(data: bytes) -> list[ProducerEntry]:
    """The entries of a producer snapshot, in file order; SnapshotCorruptError as Kafka words it."""
    if len(data) < 2:
        raise SnapshotCorruptError("Snapshot failed schema validation: null")
    version = struct.unpack_from(">h", data)[0]
    if version != 1:
        raise SnapshotCorruptError(
            f"Snapshot failed schema validation: Snapshot contained an unknown file version {version}"
        )
    if len(data) < _HEADER.size:
        raise SnapshotCorruptError("Snapshot failed schema validation: null")
    _, stored, count = _HEADER.unpack_from(data)
    room = (len(data) - _HEADER.size) // _ENTRY.size
    if count < 0 or count > room:  # never allocate for a count the bytes cannot hold
        raise SnapshotCorruptError(
            f"Snapshot failed schema validation: Error reading array of size {count}, only "
            f"{len(data) - _HEADER.size} bytes available"
        )
    entries = []
    for i in range(count):
        pid, epoch, last_seq, last_off, delta, ts, coord, txn_first = _ENTRY.unpack_from(data, _HEADER.size + i * 46)
        entries.append(ProducerEntry(pid, epoch, last_seq, last_off, delta, ts, coord,
                                     txn_first if txn_first >= 0 else None))
    computed = crc32c(memoryview(data)[6:])
    if computed != stored:
        raise SnapshotCorruptError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed}"
        )
    return entries


__all__ = ["ProducerEntry", "read_snapshot"]
