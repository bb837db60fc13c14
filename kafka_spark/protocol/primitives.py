"""Wire primitives: fixed-width ints, strings, bytes, UUIDs and lengths, classic and compact forms.

Readers take a memoryview and a position and return ``(value, next_position)``. Every length is
checked against the bytes that remain before anything is sliced or allocated, so a hostile
length field fails fast with `DecodeError`. Writers append to a bytearray.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafka_spark.errors import DecodeError, KafkaSparkError
from kafka_spark.protocol.varint import decode_uvarint, encode_uvarint

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")
BOOL = struct.Struct(">?")

# struct format codes of the fixed-width types; the compiler merges runs of them into one Struct
FIXED_CODES: dict[str, str] = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "uint32": "I",
    "float64": "d",
    "bool": "?",
}
FIXED_SIZES: dict[str, int] = {name: struct.calcsize(">" + code) for name, code in FIXED_CODES.items()}

ZERO_UUID = uuid.UUID(int=0)

_unpack_i16 = INT16.unpack_from
_unpack_i32 = INT32.unpack_from


class EncodeError(KafkaSparkError, ValueError):
    """A value cannot be encoded as the declared field type (wrong type, out of range, null)."""


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (Kafka's unsigned int32 varint)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    return decode_uvarint(buf, pos, 5)


def write_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned varint."""
    if 0 <= value < 0x80:
        out.append(value)
    else:
        out += encode_uvarint(value)


def _need(buf: memoryview, pos: int, n: int, what: str) -> int:
    """Return the end position of `n` bytes at `pos`, or raise if they are not all there."""
    end = pos + n
    if end > len(buf):
        raise DecodeError(f"{what} of {n} bytes at offset {pos} runs past the end ({len(buf)} bytes)")
    return end


def _classic_len(buf: memoryview, pos: int, wide: bool) -> tuple[int, int]:
    if wide:
        return _unpack_i32(buf, pos)[0], pos + 4
    return _unpack_i16(buf, pos)[0], pos + 2


def _compact_len(buf: memoryview, pos: int) -> tuple[int, int]:
    n, pos = read_uvarint(buf, pos)
    return n - 1, pos


def _null_len(n: int, nullable: bool, pos: int, what: str) -> None:
    if n == -1 and nullable:
        return
    raise DecodeError(f"invalid {what} length {n} at offset {pos}")


def make_string_reader(compact: bool, nullable: bool):
    """Return a reader for a (compact) (nullable) UTF-8 string."""

    def read_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
        n, pos = _compact_len(buf, pos) if compact else _classic_len(buf, pos, False)
        if n < 0:
            _null_len(n, nullable, pos, "string")
            return None, pos
        end = _need(buf, pos, n, "string")
        # invalid UTF-8 is replaced rather than rejected, as the Java client does
        return str(buf[pos:end], "utf-8", "replace"), end

    return read_string


def make_bytes_reader(compact: bool, nullable: bool, zero_copy: bool):
    """Return a reader for (compact) (nullable) bytes; `zero_copy` returns a memoryview slice."""

    def read_bytes(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = _compact_len(buf, pos) if compact else _classic_len(buf, pos, True)
        if n < 0:
            _null_len(n, nullable, pos, "bytes")
            return None, pos
        end = _need(buf, pos, n, "bytes field")
        return (buf[pos:end] if zero_copy else bytes(buf[pos:end])), end

    return read_bytes


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    """Read a 16-byte UUID."""
    end = _need(buf, pos, 16, "uuid")
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def read_array_len(buf: memoryview, pos: int, compact: bool, nullable: bool, min_item: int) -> tuple[int, int]:
    """Read an array count; -1 means null. Refuse counts the remaining bytes cannot hold."""
    n, pos = _compact_len(buf, pos) if compact else _classic_len(buf, pos, True)
    if n < 0:
        _null_len(n, nullable, pos, "array")
        return -1, pos
    if n * min_item > len(buf) - pos:
        raise DecodeError(
            f"array of {n} items (at least {min_item} bytes each) at offset {pos} "
            f"exceeds the {len(buf) - pos} bytes left"
        )
    return n, pos


def write_string(out: bytearray, value: str | None, compact: bool, nullable: bool) -> None:
    """Append a (compact) (nullable) string."""
    if value is None:
        if not nullable:
            raise EncodeError("null for a non-nullable string")
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff"
        return
    if not isinstance(value, str):
        raise EncodeError(f"expected str, got {type(value).__name__}")
    data = value.encode("utf-8")
    if compact:
        write_uvarint(out, len(data) + 1)
    else:
        if len(data) > 0x7FFF:
            raise EncodeError(f"string of {len(data)} bytes exceeds the int16 length limit")
        out += INT16.pack(len(data))
    out += data


def byte_view(data: Any) -> memoryview:
    """`data` (any bytes-like object) as a flat memoryview of unsigned bytes, not copied."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


class GatheredFrame(bytearray):
    """Bytes being encoded in which large record sets are referenced where they go rather than copied in: the
    frame is `segments()`, in order (for one vectored write)."""

    def __init__(self, size: int = 0) -> None:
        super().__init__(size)
        self.references: list[tuple[int, memoryview]] = []
        self.referenced = 0

    def refer(self, view: memoryview) -> None:
        """Place `view` at the current end, by reference."""
        self.references.append((len(self), view))
        self.referenced += view.nbytes

    def segments(self) -> list[memoryview]:
        """The frame's bytes as views: its own bytes between the referenced ones."""
        own, parts, at = memoryview(self), [], 0
        for position, view in self.references:
            parts += [own[at:position], view]
            at = position
        parts.append(own[at:])
        return [p for p in parts if p.nbytes]


class ByteRuns:
    """Bytes held as several buffers, in order (a record batch laid out in pieces): written into a frame as their
    concatenation, the large runs by reference."""

    __slots__ = ("nbytes", "runs")

    def __init__(self, runs: list[memoryview]) -> None:
        self.runs = runs
        self.nbytes = sum(r.nbytes for r in runs)

    def __len__(self) -> int:
        return self.nbytes

    def __bytes__(self) -> bytes:
        return b"".join(self.runs)


# A record set at least this large goes into a GatheredFrame by reference: below it, copying is cheaper than a
# segment of a vectored write.
REFERENCE_MIN = 64 * 1024


def write_bytes(out: bytearray, value: Any, compact: bool, nullable: bool, by_reference: bool = False) -> None:
    """Append (compact) (nullable) bytes from any bytes-like value; with `by_reference`, a large value goes into a
    `GatheredFrame` as a reference."""
    if isinstance(value, ByteRuns):
        _write_length(out, value.nbytes, compact)
        for run in value.runs:
            _write_view(out, run, by_reference)
        return
    if value is None:
        if not nullable:
            raise EncodeError("null for non-nullable bytes")
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff\xff\xff"
        return
    try:
        view = memoryview(value)
    except TypeError as exc:
        raise EncodeError(f"expected a bytes-like value, got {type(value).__name__}") from exc
    _write_length(out, view.nbytes, compact)
    _write_view(out, view, by_reference)


def _write_length(out: bytearray, n: int, compact: bool) -> None:
    if compact:
        write_uvarint(out, n + 1)
    else:
        out += INT32.pack(n)


def _write_view(out: bytearray, view: memoryview, by_reference: bool) -> None:
    if by_reference and view.nbytes >= REFERENCE_MIN and isinstance(out, GatheredFrame):
        out.refer(byte_view(view))
    else:
        out += view


def write_uuid(out: bytearray, value: Any) -> None:
    """Append a UUID given as `uuid.UUID` or 16 bytes."""
    if isinstance(value, uuid.UUID):
        out += value.bytes
        return
    try:
        data = bytes(value)
    except TypeError as exc:
        raise EncodeError(f"expected a UUID, got {type(value).__name__}") from exc
    if len(data) != 16:
        raise EncodeError(f"a UUID has 16 bytes, got {len(data)}")
    out += data


def write_array_len(out: bytearray, n: int | None, compact: bool, nullable: bool) -> None:
    """Append an array count; None writes the null marker."""
    if n is None:
        if not nullable:
            raise EncodeError("null for a non-nullable array")
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff\xff\xff"
        return
    if compact:
        write_uvarint(out, n + 1)
    else:
        out += INT32.pack(n)
