"""Spark's `from_protobuf` mapping of a message (values._Planner) as conversions of the columns ptars parses a
message into: the column-wise path's half that works in Arrow (protobuf/columnar.py runs ptars).

A conversion takes ptars' column of a field and gives the per-record path's column, with the rows that must go per
record (a null where the per-record path reads a value, a map key given twice). What it cannot convert exactly it
refuses with `Unsupported`, for the whole reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2  # type: ignore[import-untyped]
from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]

from kafka_spark.formats.protobuf.values import (
    EMPTY_STRUCT_FIELD,
    WRAPPERS,
    ProtobufOptions,
    is_map,
    is_time_message,
)

_TIME_TYPES = {"google.protobuf.Timestamp": pa.timestamp("us", tz="UTC"),
               "google.protobuf.Duration": pa.duration("us")}

# (ptars column) -> (the column of Spark's type, the rows that must go per record, or None)
Convert = Callable[[pa.Array], tuple[pa.Array, "np.ndarray | None"]]


class Unsupported(Exception):
    """The reader has something the column-wise path does not convert exactly."""


@dataclass(frozen=True)
class Node:
    """A schema node's column type (Spark's) and the conversion of ptars' column into it."""

    arrow: pa.DataType
    convert: Convert


class Planner:
    """Spark's `from_protobuf` mapping (values._Planner) as column conversions of ptars' columns."""

    def __init__(self, options: ProtobufOptions) -> None:
        self.options = options
        self.syntax: dict[str, str] = {}

    def struct(self, descriptor: Descriptor, seen: frozenset[str], root: bool = False) -> Node | None:
        self._proto3(descriptor)
        fields: list[pa.Field] = []
        parts: list[tuple[str, Node, str]] = []
        for field in descriptor.fields:
            planned = self.field(field, seen)
            if planned is not None:
                fields.append(pa.field(field.name, planned[0].arrow))
                parts.append((field.name, *planned))
        if not fields and self.options.retain_empty_message_types:
            return Node(pa.struct([pa.field(EMPTY_STRUCT_FIELD, pa.string())]), _empty_struct)
        if not fields:
            if root:
                raise Unsupported("a message without fields")
            return None
        return Node(pa.struct(fields), _struct(fields, parts))

    def field(self, field: FieldDescriptor, seen: frozenset[str]) -> tuple[Node, str] | None:
        """The field's conversion and how a missing value reads (values._Read's kinds); None when dropped."""
        if is_map(field):
            entry = field.message_type
            key, value = (self.value(entry.fields_by_name[n], seen) for n in ("key", "value"))
            if key is None or value is None:
                return None
            return Node(pa.map_(key.arrow, value.arrow), _map(key, value)), "map"
        planned = self.value(field, seen)
        if planned is None:
            return None
        if field.is_repeated:
            return Node(pa.list_(planned.arrow), _list(planned)), "repeated"
        if field.has_presence:
            if field.has_default_value:
                raise Unsupported(f"field {field.full_name} has a declared default")
            return planned, "presence"
        if self.options.emit_default_values:
            return planned, "always"
        floating = field.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE)
        return planned, "float" if floating else "nonzero"

    def value(self, field: FieldDescriptor, seen: frozenset[str]) -> Node | None:
        o, kind, t = self.options, field.type, FieldDescriptor
        if kind in (t.TYPE_INT32, t.TYPE_SINT32, t.TYPE_SFIXED32):
            return _same(pa.int32())
        if kind == t.TYPE_UINT32:
            return Node(pa.int64(), _cast(pa.uint32(), pa.int64())) if o.upcast_unsigned_ints else _bits(32)
        if kind == t.TYPE_FIXED32:
            return _bits(32)
        if kind in (t.TYPE_INT64, t.TYPE_SINT64, t.TYPE_SFIXED64):
            return _same(pa.int64())
        if kind == t.TYPE_UINT64:
            if o.upcast_unsigned_ints:
                return Node(pa.decimal128(20, 0), _cast(pa.uint64(), pa.decimal128(20, 0)))
            return _bits(64)
        if kind == t.TYPE_FIXED64:
            return _bits(64)
        simple = {t.TYPE_FLOAT: pa.float32(), t.TYPE_DOUBLE: pa.float64(), t.TYPE_BOOL: pa.bool_(),
                  t.TYPE_STRING: pa.string(), t.TYPE_BYTES: pa.binary()}
        if kind in simple:
            return _same(simple[kind])
        if kind == t.TYPE_ENUM:
            return _same(pa.int32()) if o.enums_as_ints else Node(pa.string(), _enum_names(field))
        if kind == t.TYPE_MESSAGE:
            return self.message(field, seen)
        raise Unsupported(f"field {field.full_name} has type {kind}")

    def message(self, field: FieldDescriptor, seen: frozenset[str]) -> Node | None:
        descriptor = field.message_type
        name = descriptor.full_name
        if is_time_message(descriptor, "Duration") or is_time_message(descriptor, "Timestamp"):
            if name not in _TIME_TYPES:
                raise Unsupported(f"time message {name} is not google.protobuf's")
            return Node(_TIME_TYPES[name], _micros(name == "google.protobuf.Timestamp"))
        if name == "google.protobuf.Any" and self.options.convert_any_fields_to_json:
            raise Unsupported("Any as JSON")
        if name in WRAPPERS:
            self._proto3(descriptor)
            inner = self.value(descriptor.fields_by_name["value"], seen)
            assert inner is not None
            return self.wrapper(descriptor.fields_by_name["value"], inner)
        if name in seen:
            raise Unsupported(f"message {name} is recursive")
        return self.struct(descriptor, seen | {name})

    def wrapper(self, value: FieldDescriptor, inner: Node) -> Node:
        """ptars reads a wrapper as its value (null when the wrapper is absent)."""
        floating = value.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE)
        if self.options.unwrap_primitive_wrapper_types:
            if self.options.emit_default_values:
                return inner
            # a wrapper holding its zero has no field set: it reads as absent
            return Node(inner.arrow, lambda raw: (_null_where(inner.convert(raw)[0], _zero(raw, floating)), None))
        kind = "always" if self.options.emit_default_values else "float" if floating else "nonzero"
        fields = [pa.field("value", inner.arrow)]

        def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
            child, _ = _read(inner, kind, raw)
            return pa.StructArray.from_arrays([child], fields=fields, mask=_nulls(raw)), None

        return Node(pa.struct(fields), convert)

    def _proto3(self, descriptor: Descriptor) -> None:
        file = descriptor.file
        syntax = self.syntax.get(file.name)
        if syntax is None:
            proto = descriptor_pb2.FileDescriptorProto()
            file.CopyToProto(proto)
            syntax = self.syntax[file.name] = proto.syntax
        if syntax != "proto3":
            raise Unsupported(f"{file.name} is {syntax or 'proto2'}, not proto3")


def _same(arrow: pa.DataType) -> Node:
    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if raw.type != arrow:
            raise Unsupported(f"ptars gave {raw.type} for {arrow}")
        return raw, None

    return Node(arrow, convert)


def _bits(width: int) -> Node:
    """An unsigned value as the signed one of the same bits (Spark's INT / BIGINT for uint32 / uint64)."""
    source, target = (pa.uint32(), pa.int32()) if width == 32 else (pa.uint64(), pa.int64())

    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if raw.type != source:
            raise Unsupported(f"ptars gave {raw.type} for {source}")
        return raw.view(target), None

    return Node(target, convert)


def _micros(timestamp: bool) -> Convert:
    """Nanoseconds to microseconds as values.micros truncates the nanos: ptars writes a Timestamp's nanos back
    as 0..999,999,999 and a Duration's with the sign of its seconds, so a payload that comes back whole had
    them so, and the truncation is a floor for a Timestamp, toward zero for a Duration."""
    source = pa.timestamp("ns", tz="UTC") if timestamp else pa.duration("ns")
    target = pa.timestamp("us", tz="UTC") if timestamp else pa.duration("us")

    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if raw.type != source:
            raise Unsupported(f"ptars gave {raw.type} for {source}")
        nanos = np.asarray(raw.view(pa.int64()).fill_null(0))
        micros = nanos // 1000
        if not timestamp:
            micros += (nanos < 0) & (nanos % 1000 != 0)
        return pa.array(micros, type=target, mask=_nulls_np(raw) if raw.null_count else None), None

    return convert


def _cast(source: pa.DataType, target: pa.DataType) -> Convert:
    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if raw.type != source:
            raise Unsupported(f"ptars gave {raw.type} for {source}")
        return raw.cast(target), None

    return convert


def _enum_names(field: FieldDescriptor) -> Convert:
    enum = field.enum_type
    names = {v.number: v.name for v in reversed(enum.values)}  # the first name of an aliased number

    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if raw.type != pa.int32():
            raise Unsupported(f"ptars gave {raw.type} for an enum")
        numbers, where = np.unique(np.asarray(raw.fill_null(0)), return_inverse=True)
        known = pa.array([names.get(int(n), f"UNKNOWN_ENUM_VALUE_{enum.name}_{n}") for n in numbers], pa.string())
        return _null_where(known.take(pa.array(where.ravel())), _nulls_np(raw)), None

    return convert


def _zero(raw: pa.Array, floating: bool) -> np.ndarray:
    """Where a proto3 scalar holds its zero value (for floats: +0.0 only, -0.0 is carried); nulls are not zero."""
    if floating:
        values = np.asarray(raw.fill_null(1))
        zero = values.view(np.uint32 if values.dtype == np.float32 else np.uint64) == 0
    elif pa.types.is_string(raw.type) or pa.types.is_binary(raw.type):
        zero = np.asarray(pc.equal(pc.binary_length(raw), 0).fill_null(False), dtype=bool)
    elif pa.types.is_boolean(raw.type):
        zero = np.asarray(pc.invert(raw).fill_null(False), dtype=bool)
    elif pa.types.is_integer(raw.type):
        zero = np.asarray(raw.fill_null(1)) == 0
    else:
        raise Unsupported(f"no zero value of {raw.type}")
    return np.asarray(zero, dtype=bool)


def _read(node: Node, kind: str, raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
    """One field of a message: its value as values._Read's `kind` reads it."""
    values, bad = node.convert(raw)
    if kind in ("nonzero", "float"):
        values = _null_where(values, _zero(raw, kind == "float"))
    return values, bad


def _struct(fields: list[pa.Field], parts: list[tuple[str, Node, str]]) -> Convert:
    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if not isinstance(raw, pa.StructArray):
            raise Unsupported(f"ptars gave {raw.type} for a message")
        names = {raw.type.field(i).name: i for i in range(raw.type.num_fields)}
        valid = ~_nulls_np(raw)
        children = []
        bad = np.zeros(len(raw), dtype=bool)
        for name, node, kind in parts:
            if name not in names:
                raise Unsupported(f"ptars gave no field {name}")
            child_raw = raw.field(names[name])
            child, child_bad = _read(node, kind, child_raw)
            if child_bad is not None:
                bad |= child_bad
            if kind in ("always", "nonzero", "float") and child_raw.null_count:
                bad |= _nulls_np(child_raw)  # a null where the per-record path reads a value
            children.append(child)
        out = pa.StructArray.from_arrays(children, fields=fields, mask=_nulls(raw))
        return out, (bad & valid) if bad.any() else None

    return convert


def _empty_struct(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
    field = pa.field(EMPTY_STRUCT_FIELD, pa.string())
    return pa.StructArray.from_arrays([pa.nulls(len(raw), pa.string())], fields=[field], mask=_nulls(raw)), None


def _list_parts(raw: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(offsets from 0, the values they index) of a list or map column."""
    offsets = np.asarray(raw.offsets, dtype=np.int32)
    first = int(offsets[0])
    return offsets - first, raw.values.slice(first, int(offsets[-1]) - first)


def _rows_of(offsets: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """Rows (of a list column with `offsets`) holding an item marked in `bad`."""
    rows = np.zeros(len(offsets) - 1, dtype=bool)
    rows[np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[bad]] = True
    return rows


def _list(item: Node) -> Convert:
    arrow = pa.list_(item.arrow)

    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if not isinstance(raw, pa.ListArray) or raw.null_count:
            raise Unsupported(f"ptars gave {raw.type} for a repeated field")
        offsets, items = _list_parts(raw)
        values, bad = item.convert(items)
        if items.null_count:
            bad = _nulls_np(items) if bad is None else bad | _nulls_np(items)
        out = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=arrow)
        return out, None if bad is None or not bad.any() else _rows_of(offsets, bad)

    return convert


def _map(key: Node, value: Node) -> Convert:
    arrow = pa.map_(key.arrow, value.arrow)

    def convert(raw: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
        if not isinstance(raw, pa.MapArray) or raw.null_count:
            raise Unsupported(f"ptars gave {raw.type} for a map")
        offsets, _ = _list_parts(raw)
        first = int(np.asarray(raw.offsets)[0])
        keys, key_bad = key.convert(raw.keys.slice(first, int(offsets[-1])))
        items, item_bad = value.convert(raw.items.slice(first, int(offsets[-1])))
        bad = np.zeros(len(keys), dtype=bool)
        for part in (key_bad, item_bad, _nulls_np(keys), _nulls_np(items)):
            if part is not None:
                bad |= part
        order, twice = _sorted_entries(offsets, keys)
        bad |= twice
        if order is not None:
            keys, items = keys.take(order), items.take(order)
        out = pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, items, type=arrow)
        return out, _rows_of(offsets, bad) if bad.any() else None

    return convert


def _sorted_entries(offsets: np.ndarray, keys: pa.Array) -> tuple[pa.Array | None, np.ndarray]:
    """(the entries' order sorted by key within each row, None when already so; the entries whose key the next
    entry of its row repeats)."""
    rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    if len(keys) < 2:
        return None, np.zeros(len(keys), dtype=bool)
    table = pa.table({"row": pa.array(rows), "key": keys})
    order = pc.sort_indices(table, sort_keys=[("row", "ascending"), ("key", "ascending")])
    ordered = keys.take(order)
    same = np.asarray(pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1)).fill_null(False), dtype=bool)
    same &= rows[1:] == rows[:-1]  # rows stay in place: only entries within a row move
    twice = np.zeros(len(keys), dtype=bool)
    twice[np.asarray(order)[1:][same]] = True
    moved = not (np.asarray(order) == np.arange(len(keys))).all()
    return (order if moved else None), twice


def _nulls(raw: pa.Array) -> pa.Array | None:
    return raw.is_null() if raw.null_count else None


def _nulls_np(raw: pa.Array) -> np.ndarray:
    if not raw.null_count:
        return np.zeros(len(raw), dtype=bool)
    return np.asarray(raw.is_null(), dtype=bool)


def _null_where(values: pa.Array, where: np.ndarray) -> pa.Array:
    if not where.any():
        return values
    return pc.if_else(pa.array(where), pa.scalar(None, values.type), values)
