"""Avro datums of a whole Arrow column at once, byte for byte what the per-record path writes (`AvroEncoder.encode`:
fastavro's `schemaless_writer` of the column's `to_pylist()` values).

Each schema node first computes the encoded size of each of its values (bottom-up); rows then start where the
cumulative sizes put them, and each node writes its bytes at positions computed top-down: numpy over whole
columns, no Python per row. What it cannot encode exactly it leaves, and the caller encodes that per record with
today's values and errors: a whole column (a schema or an Arrow type it does not take: unions of several types,
recursive schemas, a column whose type is not one it expects for the node), or single rows (a null where the
schema has none, an int beyond 32 bits, a string that is no enum symbol, a decimal past the schema's precision,
a map naming a key twice, a fixed of another size, a date or time Python's datetime cannot hold).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.formats.avro.guard import risks
from kafka_spark.formats.avro.types import LOGICAL, day_time_interval, definition, valid_decimal

SWITCH = "KAFKA_SPARK_AVRO_BLOCK_WRITE"
_U64 = np.uint64
_INT32 = (-(1 << 31), (1 << 31) - 1)
_DAY_US = 86_400_000_000
# date32 days and timestamp micros that `to_pylist` turns into Python dates and datetimes (year 1 to 9999); a day
# of margin for timestamps, which a time zone may move by up to a day. Values beyond go per record, where
# `to_pylist` fails on them as it does today.
_DAYS = (-719_162, 2_932_896)
_MICROS = ((_DAYS[0] + 1) * _DAY_US, _DAYS[1] * _DAY_US)
_TIMESTAMPS = {"timestamp-millis": False, "timestamp-micros": False, "local-timestamp-millis": True,
               "local-timestamp-micros": True}  # logical type -> whether local
_UNIT_US = {"s": 1_000_000, "ms": 1000, "us": 1}
_UTC = ("UTC", "Etc/UTC", "+00:00", "Z")


def block_write_on() -> bool:
    """Whether Avro columns are encoded column-wise (KAFKA_SPARK_AVRO_BLOCK_WRITE=0: every value per record)."""
    return os.environ.get(SWITCH, "1") != "0"


class Unsupported(Exception):
    """The column or its schema is one the column-wise path does not encode exactly."""


class _Piece(NamedTuple):
    """The encoded values of one schema node: each value's size in bytes, and `write(out, start)` putting value i
    at out[start[i]:start[i] + size[i]]."""

    size: np.ndarray
    write: Callable[[np.ndarray, np.ndarray], None]


def encode_column(column: pa.Array, schema: Any, named: Mapping[str, Any],
                  prefix: bytes = b"") -> tuple[pa.Array, np.ndarray] | None:
    """(each row's datum of `schema` after `prefix` as binary, null where the row is null or left; the rows left,
    not null, for the per-record path), or None when the whole column is left.

    `schema` and `named` are the writer schema as `AvroEncoder` parses it (fastavro-parsed, `normalize`d keeping
    the logical types fastavro writes itself)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    try:
        column.validate()  # the buffers are as large as the column says (strings are checked where they are read)
        if risks(schema, named)[0]:
            raise Unsupported("a recursive schema")
        valid = _validity(column)
        rows = np.flatnonzero(valid) if valid is not None else np.arange(len(column), dtype=np.int64)
        walk = _Walk(named, len(column))
        piece = walk.node(schema, column, rows, rows)
    except (Unsupported, pa.ArrowInvalid):
        return None
    size = piece.size + len(prefix)
    ends = np.cumsum(size)
    if len(ends) and ends[-1] > _INT32[1]:
        return None  # beyond a binary column's 32-bit offsets
    out = np.empty(int(ends[-1]) if len(ends) else 0, np.uint8)
    start = ends - size
    for j, byte in enumerate(prefix):
        out[start + j] = byte
    piece.write(out, start + len(prefix))
    sizes = np.zeros(len(column), np.int64)
    sizes[rows] = size
    offsets = np.zeros(len(column) + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    ok = np.zeros(len(column), bool)
    ok[rows] = True
    left = rows[walk.bad[rows]]
    ok[left] = False
    bits = pa.py_buffer(np.packbits(ok, bitorder="little"))
    datums = pa.Array.from_buffers(pa.binary(), len(column), [bits, pa.py_buffer(offsets), pa.py_buffer(out)],
                                   null_count=len(column) - int(ok.sum()))
    return datums, left


def fill(datums: pa.Array, rows: np.ndarray, payloads: list[bytes]) -> pa.Array:
    """`datums` with rows[i] (in order) set to payloads[i]."""
    if not len(rows):
        return datums
    mask = np.zeros(len(datums), bool)
    mask[rows] = True
    return pc.replace_with_mask(datums, pa.array(mask), pa.array(payloads, pa.binary()))


class _Walk:
    """Pieces of schema nodes over Arrow arrays: `idx` selects the values (positions in the array), `rows` says
    each one's row, and `bad` marks the rows left to the per-record path."""

    def __init__(self, named: Mapping[str, Any], rows: int) -> None:
        self.named = named
        self.bad = np.zeros(rows, bool)

    def refuse(self, rows: np.ndarray, mask: np.ndarray) -> None:
        if mask.any():
            self.bad[rows[mask]] = True

    def node(self, node: Any, arr: pa.Array, idx: np.ndarray, rows: np.ndarray) -> _Piece:
        node = definition(node, self.named)
        if pa.types.is_dictionary(arr.type):
            try:
                arr = arr.dictionary_decode()  # to_pylist gives the dictionary's values
            except pa.ArrowException as exc:  # an index past the dictionary, under a null struct: not Arrow's rule
                raise Unsupported("a dictionary column whose indexes it does not hold") from exc
        if isinstance(node, list):
            return self._union(node, arr, idx, rows)
        kind = node if isinstance(node, str) else node["type"]
        props: Mapping[str, Any] = {} if isinstance(node, str) else node
        t = arr.type
        if kind == "null":
            if not pa.types.is_null(t):
                raise Unsupported(f"a {t} column for Avro null")
            return _Piece(np.zeros(len(idx), np.int64), _nothing)
        valid = _validity(arr)
        if valid is not None:
            self.refuse(rows, ~valid[idx])  # fastavro refuses None where the schema has no null
        if kind in ("int", "long"):
            return _varints(_zigzag(self._integers(kind, props, arr, idx, rows)))
        if kind == "boolean" and pa.types.is_boolean(t):
            return _matrix(_bits(arr)[idx].astype(np.uint8).reshape(-1, 1))
        if kind in ("float", "double"):
            return _matrix(_floats(kind, arr, idx).view(np.uint8).reshape(len(idx), 4 if kind == "float" else 8))
        if kind in ("enum", "string") and _is_string(t):
            _utf8(arr)
        if kind == "enum" and _is_string(t):
            codes = pc.index_in(arr.take(pa.array(idx)), value_set=pa.array(node["symbols"], t))
            self.refuse(rows, ~_present(codes))  # not a symbol: fastavro's ValueError
            return _varints(_zigzag(codes.fill_null(0).to_numpy().astype(np.int64)))
        if kind in ("bytes", "fixed") and props.get(LOGICAL) == "decimal" and valid_decimal(props, kind):
            return self._decimal(props, kind, arr, idx, rows)
        if kind == "fixed" and _is_bytes(t):
            data, src, length = _segments(arr, idx)
            self.refuse(rows, length != node["size"])  # written as it is alone, refused in a union
            return _bytes(data, src, length, framed=False)
        if (kind == "string" and _is_string(t)) or (kind == "bytes" and _is_bytes(t)):
            return _bytes(*_segments(arr, idx))
        if kind in ("record", "error") and pa.types.is_struct(t):
            return self._record(node, arr, idx, rows)
        if kind == "array" and (pa.types.is_list(t) or pa.types.is_large_list(t)):
            return self._blocks(arr, idx, rows, node["items"], None)
        if kind == "map" and pa.types.is_map(t) and _is_string(t.key_type):
            return self._blocks(arr, idx, rows, node["values"], arr.values.field(0))
        raise Unsupported(f"a {t} column for Avro {kind}")

    def _integers(self, kind: str, props: Mapping[str, Any], arr: pa.Array, idx: np.ndarray,
                  rows: np.ndarray) -> np.ndarray:
        """The longs fastavro writes for an int or long node: integers as they are, dates as days, timestamps
        and times as fastavro's logical writers count them, Spark's day-time intervals as micros."""
        t = arr.type
        logical = props.get("logicalType")
        if pa.types.is_integer(t):
            values = _numbers(arr, np.dtype(t.to_pandas_dtype()))[idx]
            if values.dtype == np.uint64:
                self.refuse(rows, values > _U64((1 << 63) - 1))  # past a long: per record
            values = values.astype(np.int64)
        elif kind == "int" and logical == "date" and pa.types.is_date32(t):
            values = _numbers(arr, np.dtype(np.int32))[idx].astype(np.int64)
            self.refuse(rows, (values < _DAYS[0]) | (values > _DAYS[1]))
        elif kind == "long" and logical in _TIMESTAMPS and pa.types.is_timestamp(t) and t.unit in _UNIT_US:
            if t.tz is None and not _TIMESTAMPS[logical]:
                raise Unsupported("naive datetimes, which fastavro counts in the process's time zone")
            if t.tz is not None and _TIMESTAMPS[logical] and t.tz not in _UTC:
                raise Unsupported("local timestamps of a time zone's wall clock")
            _timezone(t)
            factor = _UNIT_US[t.unit]
            values = _numbers(arr, np.dtype(np.int64))[idx]
            self.refuse(rows, (values < _MICROS[0] // factor) | (values > _MICROS[1] // factor))
            values = np.clip(values, _MICROS[0] // factor, _MICROS[1] // factor) * factor
            if logical.endswith("millis"):
                values = values // 1000  # fastavro: whole seconds * 1000 + microseconds // 1000, a floor
        elif kind == "long" and logical == "time-micros" and pa.types.is_time64(t):
            values = _numbers(arr, np.dtype(np.int64))[idx]
            if t.unit == "ns":
                # to_pylist refuses (or with pandas, truncates) nanoseconds: per record either way
                self.refuse(rows, values % 1000 != 0)
                values = values // 1000
            self.refuse(rows, (values < 0) | (values >= _DAY_US))  # to_pylist wraps these to a day
        elif kind == "long" and day_time_interval(props) and pa.types.is_duration(t) and t.unit == "us":
            values = _numbers(arr, np.dtype(np.int64))[idx]
        else:
            raise Unsupported(f"a {t} column for Avro {kind} {logical or ''}")
        if kind == "int":
            self.refuse(rows, (values < _INT32[0]) | (values > _INT32[1]))
        return values

    def _decimal(self, props: Mapping[str, Any], kind: str, arr: pa.Array, idx: np.ndarray,
                 rows: np.ndarray) -> _Piece:
        """The unscaled value's big-endian two's complement: in the fewest bytes with a sign bit (bytes, as
        codec's `_unscaled_bytes` writes it) or in the fixed's size."""
        t = arr.type
        if not pa.types.is_decimal128(t) or t.scale != props.get("scale", 0):
            raise Unsupported(f"a {t} column for Avro decimal({props['precision']}, {props.get('scale', 0)})")
        words = _numbers(arr, np.dtype("<u8"), 2).reshape(-1, 2)[idx]
        lo, hi = words[:, 0], words[:, 1]
        negative = hi >= _U64(1 << 63)
        # |value| as 128 bits: two's complement negation, the carry into the high word when the low one is 0
        abs_lo = np.where(negative, ~lo + _U64(1), lo)
        abs_hi = np.where(negative, ~hi + (lo == 0).astype(_U64), hi)
        limit = 10 ** props["precision"]
        if limit < 1 << 127:  # beyond, every decimal128 fits
            limit_hi, limit_lo = _U64(limit >> 64), _U64(limit & ((1 << 64) - 1))
            self.refuse(rows, (abs_hi > limit_hi) | ((abs_hi == limit_hi) & (abs_lo >= limit_lo)))
        big = words.view(np.uint8)[:, ::-1]  # 16 bytes, big-endian
        if kind == "fixed":
            extra = props["size"] - 16
            if extra <= 0:
                return _matrix(np.ascontiguousarray(big[:, -props["size"]:]))
            sign = np.where(negative, np.uint8(0xFF), np.uint8(0))[:, None]
            return _matrix(np.hstack([np.repeat(sign, extra, axis=1), big]))
        # bit_length(|u|) // 8 + 1 bytes: one more for each power 2^(8n-1) that |u| reaches
        length = np.ones(len(idx), np.int64)
        for n in range(1, 16):
            if n <= 8:
                length += (abs_hi > 0) | (abs_lo >= _U64(1 << (8 * n - 1)))
            else:
                length += abs_hi >= _U64(1 << (8 * n - 65))
        flat = np.ascontiguousarray(big).reshape(-1)
        src = np.arange(len(idx), dtype=np.int64) * 16 + 16 - length
        return _bytes(flat, src, length)

    def _record(self, node: Mapping[str, Any], arr: pa.Array, idx: np.ndarray, rows: np.ndarray) -> _Piece:
        t = arr.type
        names = [f.name for f in t]
        if len(set(names)) != len(names) or "-type" in names:  # to_pylist's dict, fastavro's union validation
            raise Unsupported("a struct naming a field twice, or '-type'")
        pieces: list[_Piece] = []
        for f in node["fields"]:
            if f["name"] not in names:
                raise Unsupported(f"no column for field {f['name']!r} (fastavro writes its default)")
            pieces.append(self.node(f["type"], arr.field(f["name"]), idx, rows))
        size = np.zeros(len(idx), np.int64)
        for p in pieces:
            size += p.size

        def write(out: np.ndarray, start: np.ndarray) -> None:
            at = start.copy()
            for p in pieces:
                p.write(out, at)
                at += p.size

        return _Piece(size, write)

    def _union(self, members: list[Any], arr: pa.Array, idx: np.ndarray, rows: np.ndarray) -> _Piece:
        """A union of null and one type, as fastavro picks its branch: null for None, the other for a value."""
        bases = [definition(m, self.named) for m in members]
        nulls = [i for i, b in enumerate(bases) if b == "null"]
        other = [i for i, b in enumerate(bases) if b != "null"]
        if len(other) != 1 or len(nulls) > 1:
            raise Unsupported("a union of several types")
        present = _present(arr)[idx]
        if not nulls:
            self.refuse(rows, ~present)
        branch = np.where(present, other[0], nulls[0] if nulls else 0).astype(np.uint8) * 2  # zigzag, one byte
        sub = np.flatnonzero(present)
        value = (self.node(members[other[0]], arr, idx[sub], rows[sub]) if len(sub) or not pa.types.is_null(arr.type)
                 else _Piece(np.zeros(0, np.int64), _nothing))
        size = np.ones(len(idx), np.int64)
        size[sub] += value.size

        def write(out: np.ndarray, start: np.ndarray) -> None:
            out[start] = branch
            value.write(out, start[sub] + 1)

        return _Piece(size, write)

    def _blocks(self, arr: pa.Array, idx: np.ndarray, rows: np.ndarray, items: Any, keys: pa.Array | None) -> _Piece:
        """An array or map as fastavro writes it: one block (the count, the items; a map's item is its key then
        its value) ended by a count of 0, or the 0 alone when empty."""
        offsets = arr.offsets.to_numpy().astype(np.int64)
        first, count = offsets[idx], offsets[idx + 1] - offsets[idx]
        total = int(count.sum())
        owner = np.repeat(np.arange(len(idx), dtype=np.int64), count)  # the list each item is in
        at = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count) + first[owner]
        item_rows = rows[owner]
        values = arr.values.field(1) if keys is not None else arr.values  # offsets count from the values' start
        parts = [self.node(items, values, at, item_rows)]
        if keys is not None:
            parts.insert(0, self.node("string", keys, at, item_rows))  # each entry: its key, then its value
            self._duplicate_keys(keys, at, owner, rows)
        item_size = parts[0].size if len(parts) == 1 else parts[0].size + parts[1].size
        before = np.zeros(total + 1, np.int64)  # bytes of all items before each item
        np.cumsum(item_size, out=before[1:])
        opens = np.cumsum(count) - count  # each list's first item
        head = _varints(_zigzag(count))
        size = head.size + before[opens + count] - before[opens] + (count > 0)

        def write(out: np.ndarray, start: np.ndarray) -> None:
            head.write(out, start)
            at = np.repeat(start + head.size - before[opens], count) + before[:-1]
            for p in parts:
                p.write(out, at)
                at = at + p.size
            ended = count > 0
            out[(start + size - 1)[ended]] = 0

        return _Piece(size, write)

    def _duplicate_keys(self, keys: pa.Array, at: np.ndarray, owner: np.ndarray, rows: np.ndarray) -> None:
        """Refuse the rows of maps naming a key twice: to_pylist's pairs become a dict, one entry per key."""
        if len(at) > 1:
            codes = pc.dictionary_encode(keys.take(pa.array(at))).indices.to_numpy().astype(np.int64)
            pairs = np.sort(owner * (int(codes.max()) + 1) + codes)  # (map, key) as one number
            self.bad[rows[pairs[1:][pairs[1:] == pairs[:-1]] // (int(codes.max()) + 1)]] = True


# ---- values out of Arrow buffers -------------------------------------------------------------------

def _validity(arr: pa.Array) -> np.ndarray | None:
    """Whether each value is not null; None when none is (a null-typed array has none valid)."""
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), bool)
    if arr.null_count == 0:
        return None
    return _unpack(arr.buffers()[0], arr.offset, len(arr))


def _present(arr: pa.Array) -> np.ndarray:
    valid = _validity(arr)
    return np.ones(len(arr), bool) if valid is None else valid


def _unpack(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(buffer, np.uint8), bitorder="little", count=offset + n)
    return bits[offset:].astype(bool)


def _bits(arr: pa.Array) -> np.ndarray:
    return _unpack(arr.buffers()[1], arr.offset, len(arr)) if len(arr) else np.zeros(0, bool)


def _numbers(arr: pa.Array, dtype: np.dtype, per_value: int = 1) -> np.ndarray:
    """The value buffer of a fixed-width array as numbers of `dtype` (`per_value` to a value)."""
    buffer = arr.buffers()[1]
    if buffer is None or not len(arr):
        return np.zeros(len(arr) * per_value, dtype)
    return np.frombuffer(buffer, dtype, (arr.offset + len(arr)) * per_value)[arr.offset * per_value:]


def _floats(kind: str, arr: pa.Array, idx: np.ndarray) -> np.ndarray:
    """The little-endian floats or doubles fastavro writes: Python floats (doubles) cast to C's float or double."""
    t = arr.type
    if (pa.types.is_floating(t) and not pa.types.is_float16(t)) or pa.types.is_integer(t):
        values = _numbers(arr, np.dtype(t.to_pandas_dtype()))[idx].astype(np.float64)
    else:
        raise Unsupported(f"a {t} column for Avro {kind}")
    with np.errstate(over="ignore", invalid="ignore"):  # C's cast: infinity past a float's range
        return values.astype("<f4" if kind == "float" else "<f8")


def _segments(arr: pa.Array, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data buffer, start, length) of the selected values of a string or binary array (fixed-size too)."""
    t = arr.type
    if pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = arr.buffers()[1]
        src = (idx + arr.offset) * width
        return (np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8), src,
                np.full(len(idx), width, np.int64))
    offsets = _offsets(arr)
    data = arr.buffers()[2]
    start = offsets[idx].astype(np.int64)
    return (np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8), start,
            offsets[idx + 1].astype(np.int64) - start)


def _offsets(arr: pa.Array) -> np.ndarray:
    """The len + 1 offsets of a string or binary array's values in its data buffer."""
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    buffer = arr.buffers()[1]
    if buffer is None:  # an empty array may have none
        return np.zeros(len(arr) + 1, np.int64)
    return np.frombuffer(buffer, np.int64 if large else np.int32, arr.offset + len(arr) + 1)[arr.offset:]


def _utf8(arr: pa.Array) -> None:
    """Unsupported when a string array holds bytes that are not UTF-8 (to_pylist fails on them, per record)."""
    offsets = _offsets(arr)
    low, high = int(offsets[0]), int(offsets[-1])
    if high == low or np.frombuffer(arr.buffers()[2], np.uint8, high - low, low).max() < 0x80:
        return  # ASCII: Arrow's full validation would cost more than the encoding
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise Unsupported("strings that are not UTF-8") from exc


def _timezone(t: pa.DataType) -> None:
    """Unsupported when to_pylist cannot make datetimes of the column's time zone (it fails per record)."""
    try:
        pa.scalar(0, t).as_py()
    except Exception as exc:  # an unknown zone: what to_pylist raises is the per-record path's
        raise Unsupported(f"time zone {t.tz!r}") from exc


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_bytes(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


# ---- pieces ------------------------------------------------------------------------------------------

def _nothing(out: np.ndarray, start: np.ndarray) -> None:
    pass


def _zigzag(values: np.ndarray) -> np.ndarray:
    """Avro's zigzag of int64 as uint64, in unsigned arithmetic so -2^63 wraps to 2^64 - 1."""
    values = values.astype(np.int64, copy=False)
    return (values.view(_U64) << _U64(1)) ^ (values >> 63).view(_U64)


def _varint_sizes(u: np.ndarray) -> np.ndarray:
    size = np.ones(len(u), np.int64)
    for k in range(1, 10):
        more = u >= _U64(1 << (7 * k))
        if not more.any():
            break
        size += more
    return size


def _put_varints(out: np.ndarray, start: np.ndarray, u: np.ndarray, size: np.ndarray) -> None:
    """7 bits a byte, low first, the high bit set on all but the last byte; each round on the longer ones only."""
    while len(start):
        more = size > 1
        out[start] = ((u & _U64(0x7F)) | (more.astype(_U64) << _U64(7))).astype(np.uint8)
        if not more.any():
            return
        start, u, size = start[more] + 1, u[more] >> _U64(7), size[more] - 1


def _varints(u: np.ndarray) -> _Piece:
    """Unsigned varints (zigzagged already, or sizes that are not negative)."""
    u = u.astype(_U64, copy=False)
    size = _varint_sizes(u)
    return _Piece(size, lambda out, start: _put_varints(out, start, u, size))


def _matrix(rows: np.ndarray) -> _Piece:
    """Values of one width, a row of bytes each."""
    n, width = rows.shape

    def write(out: np.ndarray, start: np.ndarray) -> None:
        out[(start[:, None] + np.arange(width)).reshape(-1)] = rows.reshape(-1)

    return _Piece(np.full(n, width, np.int64), write)


def _bytes(data: np.ndarray, src: np.ndarray, length: np.ndarray, framed: bool = True) -> _Piece:
    """Byte strings data[src[i]:src[i] + length[i]], after their length as a varint when `framed`."""
    head = _varints(length << 1) if framed else None  # a length's zigzag: twice it
    size = length + (head.size if head is not None else 0)

    def write(out: np.ndarray, start: np.ndarray) -> None:
        if head is not None:
            head.write(out, start)
            start = start + head.size
        _copy(out, start, data, src, length)

    return _Piece(size, write)


def _copy(out: np.ndarray, dst: np.ndarray, data: np.ndarray, src: np.ndarray, length: np.ndarray) -> None:
    """out[dst[i]:dst[i] + length[i]] = data[src[i]:src[i] + length[i]] for every i, byte indexes made at once."""
    total = int(length.sum())
    if not total:
        return
    before = np.cumsum(length) - length
    if src[0] + total == src[-1] + length[-1] and np.all(src[1:] == src[:-1] + length[:-1]):
        # one run of the buffer (a whole column's values): no gather
        out[np.repeat(dst - before, length) + np.arange(total, dtype=np.int64)] = data[src[0]:src[0] + total]
        return
    source = np.repeat(src - before, length) + np.arange(total, dtype=np.int64)
    out[source + np.repeat(dst - src, length)] = data[source]
