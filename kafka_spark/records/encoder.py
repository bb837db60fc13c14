"""Encoders for all three formats and every codec: v2 record batches (with headers, producer
state, transactional and control batches) and v0/v1 message sets (with compressed wrappers)."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

from kafka_spark.protocol.primitives import ByteRuns
from kafka_spark.protocol.varint import encode_varint
from kafka_spark.records.compression import compress
from kafka_spark.records.constants import (
    CONTROL_MASK,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER,
    Compression,
    ControlType,
    TimestampType,
    compression_of,
)
from kafka_spark.records.crc import crc32, crc32c
from kafka_spark.records.model import Headers, RecordData

RecordLike = RecordData | tuple | Any
"""A RecordData, a decoded Record, or a tuple (key, value[, headers[, timestamp]])."""

_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


def _normalise(record: RecordLike) -> tuple[bytes | None, bytes | None, Headers, int]:
    if type(record) is tuple and len(record) == 4 and type(record[2]) is tuple and record[3] is not None:
        return record  # already (key, value, headers, timestamp): the producer's records, kept as they are
    if isinstance(record, tuple):
        key, value, *rest = record
        headers = rest[0] if rest else ()
        timestamp = rest[1] if len(rest) > 1 else None
    else:
        key, value, headers, timestamp = record.key, record.value, record.headers, record.timestamp
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    return key, value, tuple(headers or ()), timestamp


def encode_batch(
    records: Iterable[RecordLike],
    *,
    magic: int = MAGIC_V2,
    compression: str | int | None = None,
    base_offset: int = 0,
    timestamp_type: int = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    partition_leader_epoch: int = -1,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    xerial_snappy: bool = True,
    compression_level: int | None = None,
) -> bytes:
    """Encode records as one v2 batch, or as a v0/v1 message set (one wrapper if compressed).

    Offsets are `base_offset + offset_deltas[i]` (default: consecutive). With LogAppendTime, the
    batch (or wrapper) carries `log_append_time`. Producer id/epoch/sequence and `transactional`
    apply to v2 only.
    """
    items = [_normalise(r) for r in records]
    deltas = list(offset_deltas) if offset_deltas is not None else list(range(len(items)))
    if len(deltas) != len(items):
        raise ValueError("offset_deltas must have one entry per record")
    codec = compression_of(compression)
    if timestamp_type == TimestampType.LOG_APPEND_TIME and log_append_time is None:
        log_append_time = int(time.time() * 1000)
    if magic == MAGIC_V2:
        return _encode_v2(
            items, deltas, codec, base_offset, timestamp_type, log_append_time, producer_id, producer_epoch,
            base_sequence, transactional, False, partition_leader_epoch, last_offset_delta, xerial_snappy,
            compression_level,
        )
    if magic in (MAGIC_V0, MAGIC_V1):
        if codec == Compression.ZSTD:
            raise ValueError("zstd compression needs magic v2 (KIP-110)")
        return _encode_legacy(
            items, deltas, codec, magic, base_offset, timestamp_type, log_append_time, xerial_snappy, compression_level
        )
    raise ValueError(f"magic must be 0, 1 or 2, not {magic}")


def encode_control_batch(
    marker: int,
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    timestamp: int | None = None,
    partition_leader_epoch: int = -1,
    value: bytes | None = None,
) -> bytes:
    """A control batch of one record: a transaction end marker (ControlType.COMMIT or ABORT), or any
    other control type with its encoded `value`."""
    key = _CONTROL_KEY.pack(0, int(ControlType(marker)))
    if value is None:
        value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    return _encode_v2(
        [(key, value, (), ts)], [0], Compression.NONE, base_offset, TimestampType.CREATE_TIME, None, producer_id,
        producer_epoch, -1, True, True, partition_leader_epoch, None, True, None,
    )


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Headers) -> bytes:
    """One v2 record, length prefix included."""
    return b"".join(_record_parts(offset_delta, timestamp_delta, key, value, headers))


# Zigzag varints of 0..4095 (1-2 bytes): lengths, offset deltas and equal timestamps of typical records are
# looked up rather than encoded, which makes up most of a record's encoding cost in Python.
_VARINTS = tuple(encode_varint(i) for i in range(4096))
_NULL = b"\x01"  # zigzag(-1): a null key or value
_NO_HEADERS = b"\x00"
_ATTRIBUTES = b"\x00"
_ATTRIBUTES_AND_NO_DELTA = b"\x00\x00"  # attributes 0, then a timestamp delta of 0
_VARINT_SIZES = tuple(len(v) for v in _VARINTS)


def _varint(number: int) -> bytes:
    return _VARINTS[number] if 0 <= number < 4096 else encode_varint(number)


def _record_parts(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Headers) -> tuple[bytes, ...]:
    # the pieces of one record, length prefix first: batches join the pieces of all their records at once
    ts = _VARINTS[timestamp_delta] if 0 <= timestamp_delta < 4096 else encode_varint(timestamp_delta)
    offset = _VARINTS[offset_delta] if 0 <= offset_delta < 4096 else encode_varint(offset_delta)
    if key is None:
        key, key_length = b"", _NULL
    else:
        key_length = _VARINTS[len(key)] if len(key) < 4096 else encode_varint(len(key))
    if value is None:
        value, value_length = b"", _NULL
    else:
        value_length = _VARINTS[len(value)] if len(value) < 4096 else encode_varint(len(value))
    tail = _headers_bytes(headers) if headers else _NO_HEADERS
    size = 1 + len(ts) + len(offset) + len(key_length) + len(key) + len(value_length) + len(value) + len(tail)
    return (_varint(size), _ATTRIBUTES, ts, offset, key_length, key, value_length, value, tail)


def _headers_bytes(headers: Headers) -> bytes:
    out = bytearray(_varint(len(headers)))
    for header_key, header_value in headers:
        _varint_bytes(out, header_key.encode("utf-8"))
        _varint_bytes(out, header_value)
    return bytes(out)


def _varint_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += _NULL
    else:
        out += _varint(len(data))
        out += data


_BLANK_V2_HEADER = bytes(V2_HEADER.size)
_TIMESTAMP = itemgetter(3)


def encode_produced(
    records: Sequence[tuple[bytes | None, bytes | None, Headers, int]],
    compression: str | int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytearray:
    """A producer's batch: `records` as ``(key, value, headers, timestamp)`` tuples, base offset 0, CreateTime.

    The same bytes as `encode_batch` gives for them, built with one copy of the keys and values (two when
    compressed) and no Python call per record: a producer encodes every record it sends.
    """
    batch = encode_produced_records(records, compression)
    seal_produced(batch, producer_id, producer_epoch, base_sequence, transactional)
    return batch


def encode_produced_records(
    records: Sequence[tuple[bytes | None, bytes | None, Headers, int]],
    compression: str | int | None = None,
) -> bytearray:
    """`encode_produced` before its producer fields: what a producer can encode as soon as a batch is full, before
    it knows the batch's sequence; `seal_produced` completes it (in place)."""
    codec = compression_of(compression)
    count = len(records)
    base_ts = records[0][3] if count else NO_TIMESTAMP
    max_ts = max(map(_TIMESTAMP, records)) if count else NO_TIMESTAMP
    varints = _VARINTS
    parts: list[bytes] = [_BLANK_V2_HEADER] if codec == Compression.NONE else []
    extend = parts.extend
    sizes = _VARINT_SIZES
    for delta, (key, value, headers, ts) in enumerate(records):
        if ts == base_ts and not headers and key is not None and value is not None and delta < 4096:
            # the common record (the batch's first timestamp, a key, a value, no headers), in fewer steps
            key_size, value_size = len(key), len(value)
            if key_size < 4096 and value_size < 4096:
                size = 3 + sizes[delta] + sizes[key_size] + key_size + sizes[value_size] + value_size
                extend((varints[size] if size < 4096 else encode_varint(size), _ATTRIBUTES_AND_NO_DELTA,
                        varints[delta], varints[key_size], key, varints[value_size], value, _NO_HEADERS))
                continue
        ts_delta = ts - base_ts
        ts_bytes = varints[ts_delta] if 0 <= ts_delta < 4096 else encode_varint(ts_delta)
        offset = varints[delta] if delta < 4096 else encode_varint(delta)
        if key is None:
            key, key_length = b"", _NULL
        else:
            n = len(key)
            key_length = varints[n] if n < 4096 else encode_varint(n)
        if value is None:
            value, value_length = b"", _NULL
        else:
            n = len(value)
            value_length = varints[n] if n < 4096 else encode_varint(n)
        tail = _headers_bytes(headers) if headers else _NO_HEADERS
        size = 1 + len(ts_bytes) + len(offset) + len(key_length) + len(key) + len(value_length) + len(value) + \
            len(tail)
        extend((varints[size] if size < 4096 else encode_varint(size), _ATTRIBUTES, ts_bytes, offset, key_length,
                key, value_length, value, tail))
    if codec == Compression.NONE:
        out = bytearray().join(parts)
    else:
        out = bytearray(_BLANK_V2_HEADER)
        out += compress(codec, b"".join(parts), magic=MAGIC_V2)
    V2_HEADER.pack_into(out, 0, 0, len(out) - 12, -1, MAGIC_V2, 0, int(codec), max(count - 1, 0), base_ts, max_ts,
                        -1, -1, -1, count)
    return out


_PRODUCER_FIELDS = struct.Struct(">qhi")  # producer id, producer epoch, base sequence
_PRODUCER_FIELDS_OFFSET = 43


def seal_produced(batch: bytearray | memoryview | ByteRuns, producer_id: int = -1, producer_epoch: int = -1,
                  base_sequence: int = -1, transactional: bool = False) -> bytearray | memoryview | ByteRuns:
    """Complete (in place) a batch from `encode_produced_records` (or a writable view of one, or one in runs whose
    first holds the header) with its producer fields and its CRC."""
    head = batch.runs[0] if isinstance(batch, ByteRuns) else batch
    attributes = struct.unpack_from(">h", head, V2_ATTRIBUTES_OFFSET)[0] & ~TRANSACTIONAL_MASK
    struct.pack_into(">h", head, V2_ATTRIBUTES_OFFSET, attributes | (TRANSACTIONAL_MASK if transactional else 0))
    _PRODUCER_FIELDS.pack_into(head, _PRODUCER_FIELDS_OFFSET, producer_id, producer_epoch, base_sequence)
    crc = crc32c(memoryview(head)[V2_ATTRIBUTES_OFFSET:])
    for run in batch.runs[1:] if isinstance(batch, ByteRuns) else ():
        crc = crc32c(run, crc)
    struct.pack_into(">I", head, V2_CRC_OFFSET, crc)
    return batch


def _records_body(items: list[tuple[bytes | None, bytes | None, Headers, int]], deltas: list[int],
                  base_ts: int) -> bytes:
    # one join over every record's pieces: no per-record bytes objects in between
    parts: list[bytes] = []
    extend = parts.extend
    for (key, value, headers, ts), delta in zip(items, deltas, strict=True):
        extend(_record_parts(delta, ts - base_ts, key, value, headers))
    return b"".join(parts)


def _encode_v2(
    items: list[tuple[bytes | None, bytes | None, Headers, int]],
    deltas: list[int],
    codec: Compression,
    base_offset: int,
    timestamp_type: int,
    log_append_time: int | None,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    control: bool,
    partition_leader_epoch: int,
    last_offset_delta: int | None,
    xerial_snappy: bool,
    level: int | None,
) -> bytes:
    base_ts = items[0][3] if items else NO_TIMESTAMP
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        max_ts = log_append_time
    else:
        max_ts = max((item[3] for item in items), default=NO_TIMESTAMP)
    body = _records_body(items, deltas, base_ts)
    if codec != Compression.NONE:
        body = compress(codec, body, magic=MAGIC_V2, xerial=xerial_snappy, level=level)
    attributes = int(codec) | (TIMESTAMP_TYPE_MASK if timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
    attributes |= (TRANSACTIONAL_MASK if transactional else 0) | (CONTROL_MASK if control else 0)
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if deltas else 0
    header = bytearray(
        V2_HEADER.pack(
            base_offset, V2_HEADER.size - 12 + len(body), partition_leader_epoch, MAGIC_V2, 0, attributes,
            last_offset_delta, base_ts, max_ts, producer_id, producer_epoch, base_sequence, len(items),
        )
    )
    crc = crc32c(bytes(header[V2_ATTRIBUTES_OFFSET:]) + body)
    struct.pack_into(">I", header, V2_CRC_OFFSET, crc)
    return bytes(header) + body


def encode_message(magic: int, offset: int, attributes: int, timestamp: int, key: bytes | None,
                   value: bytes | None) -> bytes:
    """One v0/v1 message with its offset/size prefix."""
    parts = [struct.pack(">bb", magic, attributes)]
    if magic >= MAGIC_V1:
        parts.append(struct.pack(">q", timestamp))
    for data in (key, value):
        parts.append(struct.pack(">i", -1 if data is None else len(data)))
        if data is not None:
            parts.append(bytes(data))
    body = b"".join(parts)
    message = struct.pack(">I", crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def _encode_legacy(
    items: list[tuple[bytes | None, bytes | None, Headers, int]],
    deltas: list[int],
    codec: Compression,
    magic: int,
    base_offset: int,
    timestamp_type: int,
    log_append_time: int | None,
    xerial_snappy: bool,
    level: int | None,
) -> bytes:
    if any(item[2] for item in items):
        raise ValueError("magic v0/v1 messages cannot carry headers")
    # The caller has set log_append_time whenever the type is LogAppendTime; v0 has no timestamps.
    append_ts = log_append_time if magic == MAGIC_V1 and timestamp_type == TimestampType.LOG_APPEND_TIME else None
    type_bit = TIMESTAMP_TYPE_MASK if append_ts is not None else 0
    if codec == Compression.NONE:
        return b"".join(
            encode_message(magic, base_offset + delta, type_bit, ts if append_ts is None else append_ts, key, value)
            for (key, value, _, ts), delta in zip(items, deltas, strict=True)
        )
    if not items:
        raise ValueError("a compressed message set needs at least one record")
    # Inner offsets: absolute in v0 (the broker rewrites them), relative in v1.
    inner = b"".join(
        encode_message(magic, delta if magic == MAGIC_V1 else base_offset + delta, 0, ts, key, value)
        for (key, value, _, ts), delta in zip(items, deltas, strict=True)
    )
    wrapper_ts = max(item[3] for item in items) if append_ts is None else append_ts
    payload = compress(codec, inner, magic=magic, xerial=xerial_snappy, level=level)
    return encode_message(magic, base_offset + deltas[-1], int(codec) | type_bit, wrapper_ts, None, payload)


__all__ = ["RecordLike", "encode_batch", "encode_control_batch", "encode_message", "encode_produced", "encode_record"]
