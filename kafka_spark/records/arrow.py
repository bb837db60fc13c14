"""Arrow output with exactly the schema of Spark's built-in Kafka source.

Keys, values and header fields are copied out of the source buffer by one Arrow `take` each: the
source is viewed as a binary array whose elements alternate between the wanted byte ranges and
the gaps between them, and `take` of every other element gathers the ranges in C.

A reader whose batches never reach Spark (the Delta sink's direct writer) can ask for keys and values as
`binary_view` instead (`view_slices`): 16-byte views into the source buffer, the bytes not copied at all.
The batch then keeps the whole source alive, so the source must be a buffer no one reuses.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from kafka_spark.records.columns import Columns, Headers
from kafka_spark.records.model import Record

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
# Spark's own Arrow conversion names a list's item field "element".
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_TYPE))

_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]
_SCHEMA = pa.schema(_BASE_FIELDS)
_SCHEMA_WITH_HEADERS = pa.schema([*_BASE_FIELDS, pa.field("headers", HEADERS_TYPE)])

_INT32_LIMIT = (1 << 31) - 1
_MS_LIMIT = (1 << 63) // 1000  # beyond this a millisecond timestamp overflows in microseconds


@functools.cache
def _view_schema(include_headers: bool) -> pa.Schema:
    """`record_batch(..., views=True)`'s schema (built when first asked: old pyarrow has no binary_view)."""
    schema = kafka_schema(include_headers)
    for at in (schema.get_field_index("key"), schema.get_field_index("value")):
        schema = schema.set(at, schema.field(at).with_type(pa.binary_view()))
    return schema


def kafka_schema(include_headers: bool = False) -> pa.Schema:
    """Spark's Kafka source schema: key, value, topic, partition, offset, timestamp, timestampType[, headers]."""
    return _SCHEMA_WITH_HEADERS if include_headers else _SCHEMA


def slices(source: pa.Buffer, pos: np.ndarray, length: np.ndarray, kind: pa.DataType) -> pa.Array:
    """Array of `source[pos[i] : pos[i] + length[i]]`, null where length < 0 (copies each range once)."""
    n = len(pos)
    nulls = length < 0
    null_count = int(np.count_nonzero(nulls))
    if null_count == n:
        return pa.nulls(n, kind)
    size = np.maximum(length, 0) if null_count else length
    bounds = _interleave(pos, size)
    order = None
    if np.diff(bounds).min() < 0:
        # Ranges out of buffer order (nested wrappers): gather sorted, then restore the order. An empty range
        # at the start of another sorts before it.
        order = np.lexsort((size, pos))
        bounds = _interleave(pos[order], size[order])
        if np.diff(bounds).min() < 0:
            raise ValueError("overlapping byte ranges")
    lo, hi = int(bounds[0]), int(bounds[-1])
    if lo < 0 or hi > source.size:
        raise ValueError("byte ranges outside the source")
    bounds -= lo
    wide = hi - lo > _INT32_LIMIT
    view_type = (pa.large_string() if kind == pa.string() else pa.large_binary()) if wide else kind
    offsets = bounds if wide else bounds.astype(np.int32)
    view = pa.Array.from_buffers(view_type, 2 * n - 1, [None, pa.py_buffer(offsets), source.slice(lo, hi - lo)])
    picked = view.take(_evens(n))
    if order is not None:
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.arange(n)
        picked = picked.take(pa.array(inverse))
    if wide:
        picked = picked.cast(kind)
    if null_count:
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
        picked = pa.Array.from_buffers(kind, n, [validity, *picked.buffers()[1:]], null_count=null_count)
    return picked


_INLINE = 12  # a binary_view item up to this long is held in its view, not in a data buffer
_SPAN = np.arange(_INLINE, dtype=np.int64)


def view_slices(source: pa.Buffer, pos: np.ndarray, length: np.ndarray) -> pa.Array:
    """`slices(source, pos, length, pa.binary())` as a binary_view array that references `source`: nothing
    copied but items of up to 12 bytes and every item's first 4 (the views' inline part)."""
    n = len(pos)
    nulls = length < 0
    null_count = int(np.count_nonzero(nulls))
    if null_count == n:
        return pa.nulls(n, pa.binary_view())
    size = np.maximum(length, 0) if null_count else length
    lo, hi = int(pos.min()), int((pos + size).max())
    if lo < 0 or hi > source.size:
        raise ValueError("byte ranges outside the source")
    if hi - lo > _INT32_LIMIT:  # a view's offset is an int32: copy instead
        return slices(source, pos, length, pa.binary()).cast(pa.binary_view())
    u8 = np.frombuffer(source, dtype=np.uint8)
    views = np.zeros((n, 16), dtype=np.uint8)
    words = views.view(np.int32)  # length, prefix, buffer index (always 0), offset
    words[:, 0] = size
    referenced = size > _INLINE
    # The source read as a 4-byte word at every byte position: one gather copies each item's prefix.
    prefixes = np.ndarray((max(u8.size - 3, 0),), dtype=np.int32, buffer=source, strides=(1,))
    if referenced.all():
        words[:, 1] = prefixes[pos]
        words[:, 3] = pos - lo
    else:
        far = pos[referenced]
        words[referenced, 1] = prefixes[far]
        words[referenced, 3] = far - lo
        inline = np.flatnonzero(~referenced)
        if u8.size:  # else every item is empty or null: nothing to inline
            # Up to 12 bytes from each short item's start (clipped at the source's end), zeroed past its length.
            taken = u8[np.minimum(pos[inline, None] + _SPAN, u8.size - 1)]
            taken[size[inline, None] <= _SPAN] = 0
            views[inline, 4:] = taken
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), source.slice(lo, hi - lo)],
                                 null_count=null_count)


def _interleave(pos: np.ndarray, size: np.ndarray) -> np.ndarray:
    bounds = np.empty(2 * len(pos), dtype=np.int64)
    bounds[0::2] = pos
    bounds[1::2] = pos
    bounds[1::2] += size
    return bounds


_even_indices = pa.array(np.arange(0, 2 << 16, 2, dtype=np.int64))


def _evens(n: int) -> pa.Array:
    """Arrow int64 array 0, 2, 4, ... of length n (a cached prefix)."""
    global _even_indices
    cached = _even_indices
    if len(cached) < n:
        cached = _even_indices = pa.array(np.arange(0, 2 * max(n, 2 * len(cached)), 2, dtype=np.int64))
    return cached.slice(0, n)


def _constant_string(value: str, n: int) -> pa.Array:
    data = value.encode("utf-8")
    if len(data) * n > _INT32_LIMIT:
        return pa.repeat(pa.scalar(value, pa.string()), n)
    offsets = (np.arange(n + 1, dtype=np.int64) * len(data)).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def timestamps(ms: np.ndarray) -> pa.Array:
    """Kafka millisecond timestamps as timestamp[us, UTC] (null if out of the representable range)."""
    bad = (ms > _MS_LIMIT) | (ms < -_MS_LIMIT)
    us = ms * 1000
    if bad.any():
        return pa.array(us, type=pa.timestamp("us", tz="UTC"), mask=bad)
    return pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), len(us), [None, pa.py_buffer(us)])


def _utf8_keys(source: pa.Buffer, h: Headers) -> pa.Array:
    keys = slices(source, h.key_pos, h.key_len, pa.string())
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:
        # Java decodes header keys leniently; malformed UTF-8 becomes U+FFFD.
        raw = slices(source, h.key_pos, h.key_len, pa.binary())
        keys = pa.array([b.decode("utf-8", "replace") for b in raw.to_pylist()], type=pa.string())
    return keys


def headers_array(source: pa.Buffer, h: Headers) -> pa.Array:
    """The `headers` column: a list of (key, value) structs per record, null without headers."""
    values = pa.StructArray.from_arrays(
        [_utf8_keys(source, h), slices(source, h.value_pos, h.value_len, pa.binary())], fields=list(HEADER_TYPE)
    )
    offsets = np.zeros(len(h.count) + 1, dtype=np.int64)
    np.cumsum(h.count, out=offsets[1:])
    mask = pa.array(h.count == 0) if (h.count == 0).any() else None
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values, type=HEADERS_TYPE, mask=mask)


def record_batch(
    cols: Columns, source: pa.Buffer, topic: str, partition: int, include_headers: bool, views: bool = False
) -> pa.RecordBatch:
    """A RecordBatch in `kafka_schema(include_headers)` from decoded columns over `source`; with `views`, keys
    and values are binary_view arrays over `source` (`view_slices`)."""
    n = len(cols)

    def items(pos: np.ndarray, length: np.ndarray) -> pa.Array:
        return view_slices(source, pos, length) if views else slices(source, pos, length, pa.binary())

    arrays = [
        items(cols.key_pos, cols.key_len),
        items(cols.value_pos, cols.value_len),
        _constant_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(cols.offset),
        timestamps(cols.timestamp),
        pa.array(cols.timestamp_type.astype(np.int32, copy=False)),
    ]
    if include_headers:
        h = cols.headers
        if h is None:
            arrays.append(pa.nulls(n, HEADERS_TYPE))
        else:
            arrays.append(headers_array(source, h))
    return pa.RecordBatch.from_arrays(arrays, schema=_view_schema(include_headers) if views
                                      else kafka_schema(include_headers))


def records_batch(records: list[Record], topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """The same RecordBatch as `record_batch`, built from Record objects (the slow, simple way)."""
    n = len(records)
    ms = np.array([r.timestamp for r in records], dtype=np.int64)
    arrays = [
        pa.array([r.key for r in records], type=pa.binary()),
        pa.array([r.value for r in records], type=pa.binary()),
        _constant_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(np.array([r.offset for r in records], dtype=np.int64)),
        timestamps(ms),
        pa.array(np.array([r.timestamp_type for r in records], dtype=np.int32)),
    ]
    if include_headers:
        arrays.append(pa.array([[{"key": k, "value": v} for k, v in r.headers] or None for r in records],
                               type=HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(arrays, schema=kafka_schema(include_headers))
