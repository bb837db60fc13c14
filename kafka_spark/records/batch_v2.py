"""Magic v2 record batches, record by record: CRC, decompression and varint record parsing.

This is the reference decoder (one Python object per record); `vector_v2` decodes the same bytes
into columns and must agree with it exactly.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_spark.errors import CorruptRecordError, DecodeError, UnsupportedFormatError
from kafka_spark.protocol.varint import decode_uvarint
from kafka_spark.records.arena import Arena
from kafka_spark.records.compression import decompress_into
from kafka_spark.records.constants import (
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
    V2_MIN_RECORD_SIZE,
    Compression,
    TimestampType,
)
from kafka_spark.records.crc import crc32c
from kafka_spark.records.model import BatchInfo, Record, increment_sequence, wrap64

Buffer = bytes | bytearray | memoryview


def verify_crc(buf: Buffer, info: BatchInfo) -> None:
    """Raise CorruptRecordError unless the batch's CRC-32C matches its bytes."""
    start = info.position + V2_ATTRIBUTES_OFFSET
    actual = crc32c(memoryview(buf)[start : info.position + info.size])
    if actual != info.crc:
        raise CorruptRecordError(
            f"record batch at offset {info.base_offset} is corrupt: stored CRC {info.crc} != computed {actual}",
            info.base_offset,
        )


def check_header(info: BatchInfo) -> None:
    """Structural checks of a v2 header that need no record bytes."""
    if info.count is None or info.count < 0:
        raise CorruptRecordError(
            f"record batch at offset {info.base_offset} has an invalid record count {info.count}", info.base_offset
        )
    if info.compression > Compression.ZSTD:
        raise UnsupportedFormatError(
            f"record batch at offset {info.base_offset} uses unknown compression id {info.compression}"
        )
    if info.compression == Compression.NONE and info.count * V2_MIN_RECORD_SIZE > info.size - V2_HEADER_SIZE:
        raise CorruptRecordError(
            f"record batch at offset {info.base_offset} claims {info.count} records in "
            f"{info.size - V2_HEADER_SIZE} bytes",
            info.base_offset,
        )


def records_bytes(buf: Buffer, info: BatchInfo, arena: Arena, limit: int) -> tuple[Buffer, int, int]:
    """The (decompressed) records section of a batch as (buffer, start, end)."""
    start = info.position + V2_HEADER_SIZE
    end = info.position + info.size
    if info.compression == Compression.NONE:
        return buf, start, end
    try:
        at, length = decompress_into(info.compression, memoryview(buf)[start:end], arena, limit)
    except DecodeError as exc:
        raise CorruptRecordError(f"record batch at offset {info.base_offset}: {exc}", info.base_offset) from None
    if (info.count or 0) * V2_MIN_RECORD_SIZE > length:
        raise CorruptRecordError(
            f"record batch at offset {info.base_offset} claims {info.count} records in {length} bytes",
            info.base_offset,
        )
    return arena.used(), at, at + length


def varint32(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag varint with Java's int32 semantics (at most 5 bytes, high bits dropped)."""
    raw, pos = decode_uvarint(buf, pos, 5)
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def varint64(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag varlong with Java's int64 semantics (at most 10 bytes, high bits dropped)."""
    raw, pos = decode_uvarint(buf, pos, 10)
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def iter_v2_records(data: Buffer, start: int, end: int, info: BatchInfo) -> Iterator[Record]:
    """Parse the records section `data[start:end]` of batch `info`, one Record at a time."""
    base_offset = info.base_offset or 0
    log_append = info.timestamp_type == TimestampType.LOG_APPEND_TIME
    mv = memoryview(data)
    pos = start
    for _ in range(info.count or 0):
        try:
            record, pos = _parse_record(mv, pos, end, info, base_offset, log_append)
        except DecodeError as exc:
            if isinstance(exc, CorruptRecordError):
                raise
            raise CorruptRecordError(f"record batch at offset {base_offset}: {exc}", base_offset) from None
        yield record
    if pos != end:
        raise CorruptRecordError(
            f"record batch at offset {base_offset}: {end - pos} bytes remain after its {info.count} records",
            base_offset,
        )


def _parse_record(
    mv: memoryview, pos: int, end: int, info: BatchInfo, base_offset: int, log_append: bool
) -> tuple[Record, int]:
    length, pos = varint32(mv, pos)
    body_end = pos + length
    if length < 0 or body_end > end:
        raise DecodeError(f"record length {length} does not fit in the batch")
    body = mv[pos:body_end]
    # Field positions are relative to the body, so every read is bounded by the record's length.
    p = 1  # attributes: unused by every Kafka version so far
    ts_delta, p = varint64(body, p)
    offset_delta, p = varint32(body, p)
    key, p = _nullable_bytes(body, p)
    value, p = _nullable_bytes(body, p)
    count, p = varint32(body, p)
    if count < 0:
        raise DecodeError(f"invalid number of record headers {count}")
    headers = []
    for _ in range(count):
        key_len, p = varint32(body, p)
        if key_len < 0 or p + key_len > length:
            raise DecodeError(f"invalid header key size {key_len}")
        # Java decodes header keys leniently (malformed UTF-8 becomes U+FFFD); so do we.
        header_key = bytes(body[p : p + key_len]).decode("utf-8", "replace")
        p += key_len
        header_value, p = _nullable_bytes(body, p)
        headers.append((header_key, header_value))
    if p != length:
        raise DecodeError(f"record body is {length} bytes but its fields take {p}")
    offset = wrap64(base_offset + offset_delta)
    timestamp = info.max_timestamp if log_append else wrap64(info.base_timestamp + ts_delta)
    sequence = increment_sequence(info.base_sequence, offset_delta) if info.base_sequence >= 0 else -1
    record = Record(offset, timestamp, info.timestamp_type, key, value, tuple(headers), info, sequence)
    return record, body_end


def _nullable_bytes(body: memoryview, p: int) -> tuple[bytes | None, int]:
    size, p = varint32(body, p)
    if size < 0:
        return None, p
    if p + size > len(body):
        raise DecodeError(f"field of {size} bytes runs past the end of its record")
    return bytes(body[p : p + size]), p + size



def control_type(buf: Buffer, info: BatchInfo, arena: Arena, limit: int) -> int | None:
    """The marker type (ABORT/COMMIT) in the key of a control batch's first record, if readable."""
    if not info.count:
        return None
    data, start, end = records_bytes(buf, info, arena, limit)
    base_offset = info.base_offset or 0
    try:
        record, _ = _parse_record(memoryview(data), start, end, info, base_offset, False)
    except DecodeError as exc:
        raise CorruptRecordError(f"control batch at offset {base_offset}: {exc}", base_offset) from None
    marker = record.control
    return None if marker is None else marker.type
