"""A producer's v2 batch built from Arrow columns with numpy and Arrow kernels: no Python object per record.

Each record's varints (length, timestamp and offset deltas, key length; value length) are written by numpy. With
pyarrow 18 or newer, a binary-view array lists, record after record, the varints (inline in their 16-byte views, or
views of a small column when longer than a view holds) and views of the key and value in their own columns (the
rows a batch picks from a column are picked as views), and one cast to binary copies the bytes, once, into the
batch. Older pyarrow writes the varints into a small Arrow column, gathers the picked rows, then lays the batch out
by one Arrow take or an element-wise join. The bytes are those
`encode_produced_records` writes for the same records (no headers). `lay_out_records` lays out records with any
offset deltas (a batch's records as they come, call by call) and `frame_records` makes a batch of such pieces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.protocol.primitives import ByteRuns
from kafka_spark.records.compression import compress
from kafka_spark.records.constants import MAGIC_V2, V2_HEADER, Compression, compression_of


def binary_offsets(column: pa.Array) -> np.ndarray:
    """Where each item of a binary, string or large variant column starts in its data buffer, and where the last
    ends (len + 1 entries, int64)."""
    wide = pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type)
    kind = np.dtype(np.int64 if wide else np.int32)
    return np.frombuffer(column.buffers()[1], kind, len(column) + 1, column.offset * kind.itemsize).astype(np.int64)


def binary_lengths(column: pa.Array) -> np.ndarray:
    """Each item's byte length as int64, -1 for a null (binary_view columns too)."""
    if pa.types.is_binary_view(column.type):
        if column.null_count == len(column):
            return np.full(len(column), -1, np.int64)
        # a view's first four bytes are its length
        views = np.frombuffer(column.buffers()[1], np.int32, 4 * len(column), _VIEW_SIZE * column.offset)
        lengths = views[::4].astype(np.int64)
    else:
        lengths = np.diff(binary_offsets(column))
    if column.null_count:
        lengths[np.asarray(column.is_null())] = -1
    return lengths


Column: TypeAlias = "pa.Array | Sequence[pa.Array]"
"""A column, or its pieces in order."""
Pick: TypeAlias = "range | np.ndarray | None"
"""The rows of a piece a batch takes, in order (None: all of them)."""
Fields: TypeAlias = "list[tuple[_Varints | _OffsetDeltas | None, int]]"
"""Varints (None: none) each followed by a number of zero bytes."""


def encode_columns(keys: Column | None, values: Column, timestamp_deltas: np.ndarray | None,
                   base_timestamp: int, max_timestamp: int, compression: str | int | None = None,
                   lengths: tuple[np.ndarray | None, np.ndarray] | None = None,
                   picks: Sequence[Pick] | None = None) -> bytearray | memoryview:
    """A batch of the records made of `keys` (None: null keys) and `values` (binary, large_binary or binary_view
    columns of one length, or pieces of them), in order, with offset deltas 0, 1, ... and the given timestamp
    deltas (None: all 0), still without its producer fields and CRC (`seal_produced` adds them, in place: an
    uncompressed batch is a writable view of the Arrow buffer it was laid out in). `picks`: for each piece, the
    rows of it the batch holds, in order (None: all). `lengths`: the picked keys' (None without keys) and values'
    `binary_lengths`, when the caller has them."""
    codec = compression_of(compression)
    header = V2_HEADER.size if codec == Compression.NONE else 0  # laid out in front of the first record
    laid, sizes = lay_out_records(keys, values, timestamp_deltas, None, lengths, picks, header)
    return _framed(laid, header, codec, len(sizes), base_timestamp, max_timestamp)


def frame_records(laid: Sequence[memoryview], count: int, base_timestamp: int, max_timestamp: int,
                  compression: str | int | None = None) -> ByteRuns | bytearray:
    """`encode_columns`'s batch from records laid out already (`lay_out_records`, with no header), in pieces:
    `count` records, offset deltas 0 .. count - 1, timestamp deltas from `base_timestamp`. Uncompressed, it is the
    header and the pieces as they are (`seal_produced` completes it; written by reference), not copied again."""
    codec = compression_of(compression)
    if codec == Compression.NONE:
        head = bytearray(V2_HEADER.size)
        runs = ByteRuns([memoryview(head), *laid])
        _framed(head, V2_HEADER.size, codec, count, base_timestamp, max_timestamp, runs.nbytes)
        return runs
    out = _framed(b"".join(laid), 0, codec, count, base_timestamp, max_timestamp)
    assert isinstance(out, bytearray)
    return out


def _framed(laid: bytearray | bytes | memoryview, header: int, codec: int, count: int, base_timestamp: int,
            max_timestamp: int, size: int | None = None) -> bytearray | memoryview:
    # the records with `header` bytes in front (compressed: none) as a batch of `size` bytes (None: all of them
    # in `laid`): compressed, and its header written
    if codec == Compression.NONE:
        out: bytearray | memoryview = laid if isinstance(laid, (bytearray, memoryview)) else bytearray(laid)
    else:
        out = bytearray(V2_HEADER.size)
        out += compress(codec, bytes(laid), magic=MAGIC_V2)
    V2_HEADER.pack_into(out, 0, 0, (len(out) if size is None else size) - 12, -1, MAGIC_V2, 0, int(codec),
                        max(count - 1, 0), base_timestamp, max_timestamp, -1, -1, -1, count)
    return out


def lay_out_records(keys: Column | None, values: Column, timestamp_deltas: np.ndarray | None,
                    offset_deltas: np.ndarray | None, lengths: tuple[np.ndarray | None, np.ndarray] | None = None,
                    picks: Sequence[Pick] | None = None, header: int = 0) -> tuple[memoryview, np.ndarray]:
    """The bytes of the records `encode_columns` takes, as in a v2 batch (no headers), after `header` zero bytes;
    and each record's size in bytes. `offset_deltas`: the records' offset deltas (None: 0, 1, ...), such as a
    batch's records after the ones laid out before them."""
    value_parts = _pieces_of(values)
    key_parts = None if keys is None else _pieces_of(keys)
    chosen: list[Pick] = [None] * len(value_parts) if picks is None else list(picks)
    count = sum(len(v) if p is None else len(p) for v, p in zip(value_parts, chosen, strict=True))
    if lengths is None:
        lengths = (None if key_parts is None else _lengths(key_parts, chosen)), _lengths(value_parts, chosen)
    key_lengths = np.full(count, -1, np.int64) if lengths[0] is None else lengths[0]
    value_lengths = lengths[1]
    data = np.maximum(key_lengths, 0) + np.maximum(value_lengths, 0)
    by_views = bool(count) and _VIEWS
    if not by_views:
        # gathered first: the take and the join lay out whole pieces
        value_parts = [_picked(c, p) for c, p in zip(value_parts, chosen, strict=True)]
        key_parts = None if key_parts is None else [_picked(c, p) for c, p in zip(key_parts, chosen, strict=True)]
    offset = _offset_deltas(count, offset_deltas)
    key, value = _Varints(key_lengths), _Varints(value_lengths)
    time = None if timestamp_deltas is None else _Varints(timestamp_deltas)
    time_n = 1 if time is None else time.sizes
    body = 1 + time_n + offset.sizes + key.sizes + value.sizes + data + 1
    length = _Varints(body)
    # a record's head: the previous record's trailer (no headers: 0), length, attributes (0), timestamp delta (0
    # when none is given), offset delta, key length (and value length without keys)
    head: Fields = [(None, 1), (length, 1), (time, 1 if time is None else 0), (offset, 0), (key, 0)]
    tail: Fields = [(value, 0)]
    sizes = length.sizes + body
    if by_views:
        total = header + int(sizes.sum())
        kind = pa.binary() if total <= _BINARY_MAX else pa.large_binary()
        groups = [head + tail] if key_parts is None else [head, tail]
        laid = _view_layout(groups, header, key_parts, value_parts, chosen, count, kind)
    elif count and int(data.sum()) < _TAKE_BELOW * count:
        kind = _layout_kind(key_parts, value_parts)
        groups = [head + tail] if key_parts is None else [head, tail]
        laid = _take_in_order(_varint_pieces(groups, count, header - 1, kind, True), key_parts or [], value_parts,
                              count, kind)
    elif count:
        kind = _layout_kind(key_parts, value_parts)
        varints = _varint_pieces([[(length, 1), (time, 1 if time is None else 0), (offset, 0), (key, 0)],
                                  [(value, 0)]], count, header, kind, False)
        laid = _join(varints, key_parts, value_parts, count, kind)
    else:
        laid = memoryview(bytearray(header))
    return laid, sizes


def _pieces_of(column: Column) -> list[pa.Array]:
    return [column] if isinstance(column, pa.Array) else list(column)


def _lengths(parts: list[pa.Array], picks: list[Pick]) -> np.ndarray:
    each = [binary_lengths(c) if p is None else binary_lengths(c)[_index(p)] for c, p in zip(parts, picks,
                                                                                            strict=True)]
    return each[0] if len(each) == 1 else np.concatenate(each)


def _index(pick: range | np.ndarray) -> slice | np.ndarray:
    return slice(pick.start, pick.stop) if isinstance(pick, range) else pick


def _picked(column: pa.Array, pick: Pick) -> pa.Array:
    """The rows `pick` of `column` (binary or large_binary): a slice for a run, a gathered copy otherwise."""
    if pa.types.is_binary_view(column.type):
        column = column.cast(pa.large_binary())
    if pick is None:
        return column
    if isinstance(pick, range):
        return column.slice(pick.start, len(pick))
    return column.take(pick)


def _layout_kind(keys: list[pa.Array] | None, values: list[pa.Array]) -> pa.DataType:
    # all pieces binary: the layout is binary too (no cast); otherwise everything is large_binary
    return pa.binary() if all(pa.types.is_binary(c.type) for c in (keys or []) + values) else pa.large_binary()


# A binary-view item is 16 bytes (Arrow's columnar format): its length (int32), then either the bytes themselves (12
# or fewer) or their first four bytes, the index of the data buffer holding them and their offset there (int32s).
# numpy moves the items as complex128 (one 16-byte element: fancy indexing at memcpy speed, where a structured dtype
# copies field by field) and reads their fields as four int32s.
_VIEW = np.dtype(np.complex128)
_VIEW_SIZE = 16
_INLINE = 12
_BINARY_MAX = (1 << 31) - 1  # a binary column's offsets are int32


def _views_supported() -> bool:
    # casts between binary and binary_view came with pyarrow 18
    try:
        return pa.array([b"x" * 20], pa.binary()).cast(pa.binary_view()).cast(pa.binary())[0].as_py() == b"x" * 20
    except (AttributeError, NotImplementedError, pa.ArrowNotImplementedError):
        return False


_VIEWS = _views_supported()


def as_views(column: pa.Array) -> pa.Array:
    """`column` (binary, large_binary or string) as binary_view: views of its items, their bytes not copied
    (the way `encode_columns` takes a column many batches pick rows from, when pyarrow has views)."""
    if not _VIEWS or pa.types.is_binary_view(column.type):
        return column
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary())
    return column.cast(pa.binary_view())


def _views_of(column: pa.Array) -> tuple[np.ndarray, list[pa.Buffer]]:
    """The 16-byte views of `column`'s items (zero length for a null) and its data buffers."""
    if column.null_count == len(column):
        return np.zeros(len(column), _VIEW), []
    column = as_views(column)
    views = np.frombuffer(column.buffers()[1], _VIEW, len(column), column.offset * _VIEW_SIZE)
    if column.null_count:
        views = views.copy()
        views[np.asarray(column.is_null())] = 0
    return views, list(column.buffers()[2:])


def _view_layout(groups: list[Fields], header: int, keys: list[pa.Array] | None, values: list[pa.Array],
                 picks: list[Pick], count: int, kind: pa.DataType) -> memoryview:
    """The records' bytes: `header` zero bytes, then ``head, key, value length, value`` per record (``head, value``
    without keys; `groups` the varints of the heads and of the value lengths) and the last record's trailer, from
    views of the varints and of the picked keys and values, copied once by a cast."""
    # items: the header, each record's views side by side (heads, value lengths with keys), then the trailer
    width = 2 if keys is None else 4
    items = np.zeros(width * count + 2, _VIEW)
    table = items[1:-1].reshape(count, width)
    buffers: list[pa.Buffer] = []
    if not _inline_varints(items, groups, count, width):
        # a head longer than a view holds: the varints go in a column of their own, viewed
        heads, buffers = _views_of(_varint_pieces(groups, count, -1, pa.binary(), True))
        table[:, 0] = heads[:count]
        if keys is not None:
            table[:, 2] = heads[count:2 * count]
        items[-1] = heads[-1]
    if header:
        # a view of `header` zero bytes in a buffer of its own (a header is longer than a view holds)
        items[:1].view(np.int32)[[0, 2]] = header, len(buffers)
        buffers.append(pa.py_buffer(bytes(header)))
    at = 0
    for i, (value, pick) in enumerate(zip(values, picks, strict=True)):
        n = len(value) if pick is None else len(pick)
        for column, part in [(width - 1, value)] if keys is None else [(1, keys[i]), (3, value)]:
            views, data = _views_of(part)
            chosen = views[_index(pick)] if isinstance(pick, np.ndarray) else views[_index(pick or range(n))].copy()
            if data and buffers:
                # the views point into `part`'s data buffers, which come after those listed so far
                fields = chosen.view(np.int32).reshape(n, 4)
                fields[:, 2] += np.multiply(fields[:, 0] > _INLINE, len(buffers), dtype=np.int32)
            table[at:at + n, column] = chosen
            buffers += data
        at += n
    laid = pa.Array.from_buffers(pa.binary_view(), len(items), [None, pa.py_buffer(items), *buffers]).cast(kind)
    return memoryview(laid.buffers()[2])[:int(binary_offsets(laid)[-1])]


def _inline_varints(items: np.ndarray, groups: list[Fields], count: int, width: int) -> bool:
    """Write each group's varints of a record into its view (group g at item ``1 + record * width + 2 * g``), the
    bytes inline, and the trailer into the last item; False (nothing written) when a record's group is longer
    than a view holds. The first record's head leaves out its leading gap: the header stands in its place."""
    sizes = [sum((gap if f is None else f.sizes + gap) for f, gap in fields) for fields in groups]
    if any(int(np.max(s)) > _INLINE for s in sizes):
        return False
    # A view as two little-endian uint64 words: its length in bytes 0-3, then the inline bytes. Each varint's
    # bytes, as an integer, are shifted into place: into the first word, the second, or across both (numpy
    # shifts by 64 bits or more, and the wrapped-around negative ones, give 0).
    words = items.view(np.uint64).reshape(-1, 2)
    for g, (fields, size) in enumerate(zip(groups, sizes, strict=True)):
        low = np.asarray(size, np.int64).astype(np.uint64)  # a group always has a varint: size is an array
        high = np.zeros(count, np.uint64)
        at = np.full(count, 32, np.uint64)  # in bits: the inline bytes start at byte 4
        if g == 0:
            low[0] -= np.uint64(1)
            at[0] -= np.uint64(8)
        for field, gap in fields:
            if field is not None:
                codes = field.codes()
                low |= codes << at
                high |= codes << (at - np.uint64(64))
                high |= codes >> (np.uint64(64) - at)
                at += field.sizes.astype(np.uint64) << np.uint64(3)
            at += np.uint64(8 * gap)
        words[1 + 2 * g:1 + width * count:width, 0] = low
        words[1 + 2 * g:1 + width * count:width, 1] = high
    words[-1, 0] = 1  # the trailer: one zero byte
    return True


# Where pyarrow has views, records of every size are laid out by them: each byte is copied once, where the other
# layouts gather the picked rows first (a partition's batch of 5,000 keyed records picked from four sources:
# 100 B 158 -> 127 ns a record, 1 KB 405 -> 210). Older pyarrow lays out small records by one Arrow take over a
# column of all the pieces, large ones by joining the pieces element-wise: the take costs ~4 ns a piece where the
# join costs ~6, but needs the keys and values copied into that column first (10,000 keyed records: 100 B 530
# against 625 us, 400 B 600 against 640, 600 B 785 against 710, 1 KB 1,440 against 1,340).
_TAKE_BELOW = 500  # bytes of key and value a record, on average


def layout_columns(keys: pa.Array | None, values: pa.Array) -> tuple[pa.Array | None, pa.Array]:
    """The key and value columns as `encode_columns` best picks rows of them for many batches: views of their
    items (no bytes copied) where pyarrow has views, else the columns themselves."""
    return None if keys is None else as_views(keys), as_views(values)


def _join(varints: pa.Array, keys: list[pa.Array] | None, values: list[pa.Array], count: int,
          kind: pa.DataType) -> memoryview:
    """The records' bytes, ``head, key, value length, value, trailer`` joined element-wise per record."""
    empty = pa.scalar(b"", kind)
    key_column = empty if keys is None else _as(_concat(keys), kind)
    parts = [varints.slice(0, count), key_column, varints.slice(count, count), _as(_concat(values), kind),
             pa.scalar(b"\x00", kind), empty]
    joined = pc.binary_join_element_wise(*parts, null_handling="replace", null_replacement=b"")
    return memoryview(joined.buffers()[2])[:int(binary_offsets(joined)[-1])]


def _concat(columns: list[pa.Array]) -> pa.Array:
    if len(columns) == 1:
        return columns[0]
    if len({c.type for c in columns}) > 1:
        columns = [c.cast(pa.large_binary()) for c in columns]
    return pa.concat_arrays(columns)


def _take_in_order(varints: pa.Array, keys: list[pa.Array], values: list[pa.Array], count: int,
                   kind: pa.DataType) -> memoryview:
    """The records' bytes: ``head, key, value length, value`` per record (``head, value`` without keys) and the
    last record's trailer, taken in that order from one column of all the pieces."""
    pieces = pa.concat_arrays([varints, *(_as(c, kind) for c in keys), *(_as(c, kind) for c in values)])
    # item numbers in `pieces`: heads 0.., value lengths count.. (with keys), the trailer, keys, values
    trailer = len(varints) - 1
    steps = [0, trailer + 1, count, trailer + 1 + count] if keys else [0, trailer + 1]
    order = np.empty(len(steps) * count + 1, np.int32 if len(pieces) < 1 << 31 else np.int64)
    np.add(np.arange(count, dtype=order.dtype)[:, None], np.array(steps, order.dtype),
           out=order[:-1].reshape(count, -1))
    order[-1] = trailer
    laid = pieces.take(order)
    return memoryview(laid.buffers()[2])[:int(binary_offsets(laid)[-1])]


def _as(column: pa.Array, kind: pa.DataType) -> pa.Array:
    return column if column.type == kind else column.cast(kind)


# Zigzag values below _SHORT take one or two varint bytes, looked up; longer ones are written byte by byte.
_SHORT = 1 << 14
_TABLE = np.arange(_SHORT, dtype=np.int64)
_SHORT_SIZES = np.where(_TABLE < 128, 1, 2).astype(np.int64)
_LOW = ((_TABLE & 0x7F) | np.where(_TABLE < 128, 0, 0x80)).astype(np.uint8)
_HIGH = (_TABLE >> 7).astype(np.uint8)
_CODES = _LOW.astype(np.uint64) | (_HIGH.astype(np.uint64) << np.uint64(8))  # a varint's bytes, little-endian


class _Varints:
    """The zigzag varints of int64 values: their unsigned form and each one's size in bytes."""

    __slots__ = ("short", "sizes", "zigzag")

    def __init__(self, values: np.ndarray) -> None:
        self.zigzag = ((values << 1) ^ (values >> 63)).view(np.uint64)
        self.short = not len(values) or int(self.zigzag.max()) < _SHORT
        if self.short:
            self.sizes = _SHORT_SIZES[self.zigzag.view(np.int64)]
        else:
            sizes = np.ones(len(values), np.int64)
            for step in range(1, 10):
                sizes += self.zigzag >= np.uint64(1 << (7 * step))
            self.sizes = sizes

    def codes(self) -> np.ndarray:
        """Each varint's bytes as a little-endian uint64 (varints of up to 8 bytes)."""
        if self.short:
            return _CODES[self.zigzag.view(np.int64)]
        codes = np.zeros(len(self.zigzag), np.uint64)
        for step in range(min(int(self.sizes.max()), 8)):
            piece = (self.zigzag >> np.uint64(7 * step)) & np.uint64(0x7F)
            more = (self.sizes > step + 1).astype(np.uint64) << np.uint64(7)
            codes |= (piece | more) << np.uint64(8 * step)
        return codes

    def put(self, out: np.ndarray, at: np.ndarray) -> None:
        """Write the varints at positions `at` of `out`."""
        z = self.zigzag
        if self.short:
            index = z.view(np.int64)
            out[at] = _LOW[index]
            two = np.flatnonzero(index >= 128)
            if len(two):
                out[at[two] + 1] = _HIGH[index[two]]
            return
        for step in range(int(self.sizes.max())):
            rows = np.flatnonzero(self.sizes > step)
            piece = (z[rows] >> np.uint64(7 * step)) & np.uint64(0x7F)
            more = (self.sizes[rows] > step + 1).astype(np.uint64) << np.uint64(7)
            out[at[rows] + step] = (piece | more).astype(np.uint8)


# A batch's offset deltas are always 0, 1, ..., count - 1: their varints come from tables grown to the largest
# batch seen (up to _OFFSETS_MAX records: three bytes each at most). Their sizes are runs (1 byte below 64, 2 below
# 8,192, 3 above), so writing them takes three slice assignments, where the general path's loop cost ~160 us a
# batch of 9,000 records.
_OFFSETS_MAX = 1 << 20
_offset_tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0, np.int64),) + \
    (np.zeros(0, np.uint8),) * 3 + (np.zeros(0, np.uint64),)


def _offset_tables_for(count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    global _offset_tables
    tables = _offset_tables
    if len(tables[0]) < count:
        n = min(max(count, 2 * len(tables[0]), 1 << 14), _OFFSETS_MAX)
        z = np.arange(n, dtype=np.int64) << 1  # zigzag of a non-negative value
        sizes = 1 + (z >= 128).astype(np.int64) + (z >= 1 << 14)
        first = ((z & 0x7F) | np.where(z >= 128, 0x80, 0)).astype(np.uint8)
        second = (((z >> 7) & 0x7F) | np.where(z >= 1 << 14, 0x80, 0)).astype(np.uint8)
        third = (z >> 14).astype(np.uint8)
        codes = first.astype(np.uint64) | (second.astype(np.uint64) << np.uint64(8)) | \
            (third.astype(np.uint64) << np.uint64(16))
        tables = _offset_tables = (sizes, first, second, third, codes)  # replaced whole: thread-safe
    return tables


class _OffsetDeltas:
    """The varints of the offset deltas 0 .. count - 1, or of the given ones (all below _OFFSETS_MAX), from the
    tables."""

    __slots__ = ("at", "count", "sizes", "tables")

    def __init__(self, count: int, deltas: np.ndarray | None = None) -> None:
        self.count, self.at = count, deltas
        self.tables = _offset_tables_for(count if deltas is None else int(deltas.max()) + 1 if count else 0)
        self.sizes = self.tables[0][:count] if deltas is None else self.tables[0][deltas]

    def _of(self, table: np.ndarray) -> np.ndarray:
        return table[:self.count] if self.at is None else table[self.at]

    def codes(self) -> np.ndarray:
        """Each varint's bytes as a little-endian uint64."""
        return self._of(self.tables[4])

    def put(self, out: np.ndarray, at: np.ndarray) -> None:
        """Write the varints at positions `at` of `out`."""
        _, first, second, third, _ = self.tables
        out[at] = self._of(first)
        for table, size in ((second, 2), (third, 3)):
            rows = np.flatnonzero(self.sizes >= size)
            if len(rows):
                out[at[rows] + size - 1] = self._of(table)[rows]


def _offset_deltas(count: int, deltas: np.ndarray | None) -> _OffsetDeltas | _Varints:
    """The varints of `count` offset deltas: 0, 1, ... (None) or `deltas`."""
    if deltas is None:
        return _OffsetDeltas(count) if count <= _OFFSETS_MAX else _Varints(np.arange(count, dtype=np.int64))
    if not count or int(deltas.max()) < _OFFSETS_MAX:
        return _OffsetDeltas(count, deltas)
    return _Varints(deltas)


def _varint_pieces(groups: list[Fields], count: int, lead: int, kind: pa.DataType, trailer: bool) -> pa.Array:
    """A column of `kind`: for each group, one item per record (`count`) holding each field's varint of that
    record and its gap of zero bytes, then (`trailer`) one zero byte. The first item has `lead` more bytes in front
    (negative: fewer, from the gap its first field starts with)."""
    widths = np.ones(len(groups) * count + trailer, np.int64)
    for g, fields in enumerate(groups):
        widths[g * count:(g + 1) * count] = sum((gap if f is None else f.sizes + gap) for f, gap in fields)
    widths[0] += lead
    offsets = np.zeros(len(widths) + 1, np.int64)
    np.cumsum(widths, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), np.uint8)
    for g, fields in enumerate(groups):
        at = offsets[g * count:(g + 1) * count].copy()
        if g == 0:
            at[0] += lead
        for field, gap in fields:
            if field is not None:
                field.put(data, at)
                at += field.sizes
            at += gap
    return _column(kind, offsets, data)


def _column(kind: pa.DataType, offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    width = np.int64 if kind == pa.large_binary() else np.int32
    return pa.Array.from_buffers(kind, len(offsets) - 1, [None, pa.py_buffer(offsets.astype(width, copy=False)),
                                                          pa.py_buffer(data)])
