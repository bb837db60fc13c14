"""The lines `kafka-spark dump-log` prints for batches and records: Kafka's DumpLogSegments text (4.1), quirks
included, or one JSON object per line with `--json`."""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from typing import IO, Any

from kafka_spark.cli.java_text import java_utf8
from kafka_spark.cli.kafka_json import kafka_json
from kafka_spark.errors import DecodeError, KafkaSparkError
from kafka_spark.protocol.control import (
    decode_kraft_control,
    is_kraft_control,
    kraft_control_fields,
    kraft_control_label,
)
from kafka_spark.records import Compression, TimestampType
from kafka_spark.records.model import BatchInfo
from kafka_spark.segments import DeepRecord

INT_MAX = 0x7FFFFFFF
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
_TS_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}
_CONTROL_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                  5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

class DumpError(KafkaSparkError):
    """A file the dump cannot go on with (where Kafka's tool throws)."""


@dataclass
class Options:
    print_data: bool = False
    deep: bool = False
    skip_metadata: bool = False
    verify_only: bool = False
    sanity_only: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT_MAX
    json: bool = False


class Output:
    """Lines to stdout as UTF-8 whatever the locale (Kafka's tools write UTF-8 too); JSON in --json mode."""

    def __init__(self, stream: IO[bytes], as_json: bool) -> None:
        self.stream = stream
        self.as_json = as_json
        self._parts: list[bytes] = []
        self._size = 0

    def line(self, text: str) -> None:
        if not self.as_json:
            self._write(text)

    def obj(self, **fields: Any) -> None:
        if self.as_json:
            self._write(json.dumps(fields, ensure_ascii=False))

    def _write(self, text: str) -> None:
        data = text.encode("utf-8", "surrogateescape") + b"\n"
        self._parts.append(data)
        self._size += len(data)
        if self._size > 1 << 20:
            self.flush()

    def flush(self) -> None:
        self.stream.write(b"".join(self._parts))
        self.stream.flush()
        self._parts.clear()
        self._size = 0


def _text(data: bytes) -> str:
    # The tool's default decoder is `new String(bytes, UTF_8)`, with Java's count of U+FFFDs.
    return java_utf8(data)


def optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _codec(info: BatchInfo) -> str:
    try:
        return Compression(info.compression).name.lower()
    except ValueError:
        raise DumpError(f"Unknown compression type id: {info.compression}") from None


def batch_valid(buf: memoryview, info: BatchInfo) -> bool:
    from kafka_spark.records.iterate import verify_batch

    try:
        verify_batch(buf, info)
    except KafkaSparkError:
        return False
    return True


def batch_line(info: BatchInfo, position: int, valid: bool) -> str:
    """DumpLogSegments' line for one batch (v2) or top-level message (v0/v1)."""
    tail = (f" position: {position} {_TS_NAMES[TimestampType(info.timestamp_type)]}: {info.max_timestamp}"
            f" size: {info.size} magic: {info.magic} compresscodec: {_codec(info)} crc: {info.crc}"
            f" isvalid: {'true' if valid else 'false'}")
    if info.magic < 2:
        return f"offset: {info.last_offset}{tail}"
    return (f"baseOffset: {info.base_offset} lastOffset: {info.last_offset} count: {info.count}"
            f" baseSequence: {info.base_sequence} lastSequence: {info.last_sequence}"
            f" producerId: {info.producer_id} producerEpoch: {info.producer_epoch}"
            f" partitionLeaderEpoch: {info.partition_leader_epoch}"
            f" isTransactional: {str(info.is_transactional).lower()} isControl: {str(info.is_control).lower()}"
            f" deleteHorizonMs: {optional_long(info.delete_horizon_ms)}{tail}")


def _kraft_json(type_id: int, value: bytes | None, offset: int) -> str:
    """A KRaft control record's value as Kafka's JSON; DumpError naming the offset if it does not parse."""
    try:
        decoded = decode_kraft_control(type_id, value or b"")
    except DecodeError as exc:
        raise DumpError(f"control record at offset {offset}: {exc}") from None
    return kafka_json(kraft_control_fields(type_id), decoded)


def _control_text(deep: DeepRecord) -> str:
    key, value = deep.record.key, deep.record.value
    if key is None or len(key) < 4:
        raise DumpError(f"control record at offset {deep.record.offset} has a key of fewer than 4 bytes")
    version, type_id = struct.unpack_from(">hh", key)
    if version < 0:
        raise DumpError(f"control record at offset {deep.record.offset} has key version {version}")
    if type_id in (0, 1):
        if value is None or len(value) < 6:
            raise DumpError(f"end transaction marker at offset {deep.record.offset} has a value of fewer than 6 bytes")
        return f" endTxnMarker: {_CONTROL_NAMES[type_id]} coordinatorEpoch: {struct.unpack_from('>i', value, 2)[0]}"
    if is_kraft_control(type_id):
        return f" {kraft_control_label(type_id)} {_kraft_json(type_id, value, deep.record.offset)}"
    return f" controlType: {_CONTROL_NAMES.get(type_id, 'UNKNOWN')}({type_id})"


def record_line(deep: DeepRecord, info: BatchInfo, opts: Options) -> str:
    """DumpLogSegments' line for one record (assembled the way the tool assembles it, gaps included)."""
    r = deep.record
    parts = []
    prefix = "| "
    if not opts.skip_metadata:
        parts.append(f"{prefix}offset: {r.offset} {_TS_NAMES[TimestampType(info.timestamp_type)]}: {r.timestamp}"
                     f" keySize: {-1 if r.key is None else len(r.key)}"
                     f" valueSize: {-1 if r.value is None else len(r.value)}")
        prefix = " "
        if info.magic >= 2:
            parts.append(f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]")
        else:
            parts.append(f" isValid: {'true' if deep.valid else 'false'} crc: {deep.crc}}}")
        if info.is_control:
            parts.append(_control_text(deep))
    if opts.print_data and not info.is_control:
        if r.key is not None:
            parts.append(f"{prefix}key: {_text(r.key)}")
        if r.value is not None:
            parts.append(f" payload: {_text(r.value)}")
    return "".join(parts)


def record_json(deep: DeepRecord, opts: Options) -> dict[str, Any]:
    r = deep.record
    out: dict[str, Any] = {"offset": r.offset, "timestamp": r.timestamp,
                           "key_size": -1 if r.key is None else len(r.key),
                           "value_size": -1 if r.value is None else len(r.value)}
    if r.batch.magic >= 2:
        out.update(sequence=r.sequence, header_keys=[k for k, _ in r.headers])
    else:
        out.update(crc=deep.crc, valid=deep.valid)
    marker = r.control
    if marker is not None:
        out.update(control_type=marker.name, coordinator_epoch=marker.coordinator_epoch)
        if is_kraft_control(marker.type) and r.value is not None:
            out["control_value"] = json.loads(_kraft_json(marker.type, r.value, r.offset))
    if opts.print_data:
        out.update(key=None if r.key is None else base64.b64encode(r.key).decode(),
                   value=None if r.value is None else base64.b64encode(r.value).decode(),
                   headers=[[k, None if v is None else base64.b64encode(v).decode()] for k, v in r.headers])
    return out


def batch_json(info: BatchInfo, position: int, valid: bool) -> dict[str, Any]:
    return {"position": position, "size": info.size, "magic": info.magic, "base_offset": info.base_offset,
            "last_offset": info.last_offset, "count": info.count, "base_sequence": info.base_sequence,
            "last_sequence": info.last_sequence, "producer_id": info.producer_id,
            "producer_epoch": info.producer_epoch, "partition_leader_epoch": info.partition_leader_epoch,
            "is_transactional": info.is_transactional, "is_control": info.is_control,
            "delete_horizon_ms": info.delete_horizon_ms,
            "timestamp_type": _TS_NAMES[TimestampType(info.timestamp_type)],
            "max_timestamp": info.max_timestamp, "compression": _codec(info), "crc": info.crc, "valid": valid}


