"""Record-level views of one batch for log dumps: every record, control or not, with what a
v0/v1 message carries itself (its CRC and whether it matches)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_spark.records import batch_v2, legacy
from kafka_spark.records.arena import Arena
from kafka_spark.records.compression import DEFAULT_MAX_DECOMPRESSED
from kafka_spark.records.constants import LEGACY_CRC_OFFSET, MAGIC_V2
from kafka_spark.records.crc import crc32
from kafka_spark.records.model import BatchInfo, Record

_CRC = struct.Struct(">I")

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class DeepRecord:
    """A record and, for magic v0/v1, its message's stored CRC and whether the bytes match it."""

    record: Record
    crc: int | None = None
    valid: bool | None = None


def deep_records(buf: Buffer, info: BatchInfo, limit: int = DEFAULT_MAX_DECOMPRESSED) -> Iterator[DeepRecord]:
    """Every record of batch `info` in `buf` (control records included), without checking CRCs."""
    arena = Arena(capacity=0)
    if info.magic == MAGIC_V2:
        batch_v2.check_header(info)
        data, start, end = batch_v2.records_bytes(buf, info, arena, limit)
        for record in batch_v2.iter_v2_records(data, start, end, info):
            yield DeepRecord(record)
        return
    found = legacy.leaves(buf, info, arena, limit, verify=False)
    inner = arena.used()
    for leaf in found:
        src = inner if leaf.in_arena else buf
        stored = _CRC.unpack_from(src, leaf.start + LEGACY_CRC_OFFSET)[0]
        valid = crc32(memoryview(src)[leaf.start + 16 : leaf.end]) == stored
        yield DeepRecord(legacy.leaf_record(src, leaf, info), stored, valid)


__all__ = ["DeepRecord", "deep_records"]
