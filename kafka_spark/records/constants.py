"""Numbers of the Kafka log format: magic values, attribute bits, header layouts, codec ids."""

from __future__ import annotations

import struct
from enum import IntEnum

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2

# Every format starts with offset (int64) and size (int32); the magic byte sits at the same
# position (16) in v0/v1 messages and v2 batches, which is how a reader tells them apart.
LOG_OVERHEAD = 12
SIZE_OFFSET = 8
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17

# v0/v1 message: crc(4) magic(1) attributes(1) [timestamp(8)] key_len(4) value_len(4).
LEGACY_OVERHEAD_V0 = 14
LEGACY_OVERHEAD_V1 = 22
LEGACY_CRC_OFFSET = 12  # from the start of the log entry (offset field)

# v2 batch header, 61 bytes; the CRC-32C covers attributes to the end of the batch.
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_HEADER_SIZE = V2_HEADER.size
V2_CRC_OFFSET = 17
V2_ATTRIBUTES_OFFSET = 21
V2_MIN_SIZE = V2_HEADER_SIZE - LOG_OVERHEAD  # smallest legal batch-length field
V2_MIN_RECORD_SIZE = 7  # length, attributes, timestamp, offset, key, value, header count

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1


class Compression(IntEnum):
    """Compression codec ids as stored in the attribute bits."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    """Timestamp types as Kafka's Java client (and Spark's `timestampType` column) number them."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(IntEnum):
    """Control record types (the int16 after the version in a control record's key)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def compression_of(name: str | int | Compression | None) -> Compression:
    """Map a codec name ("gzip", "zstd", ...), id or None to a `Compression`."""
    if name is None:
        return Compression.NONE
    if isinstance(name, int):
        return Compression(name)
    try:
        return Compression[name.strip().upper()]
    except KeyError:
        raise ValueError(f"unknown compression {name!r}; use one of none, gzip, snappy, lz4, zstd") from None
