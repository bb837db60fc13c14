"""Spark's `from_protobuf` mapping of a message descriptor: its options, the Arrow type, and a converter
of parsed messages into that type's Python values, built once per descriptor."""

from __future__ import annotations

import decimal
import json
import keyword
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from google.protobuf import json_format  # type: ignore[import-untyped]
from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import Message  # type: ignore[import-untyped]

from kafka_spark.errors import ConfigError, PayloadError

# Spark's option names (case-insensitive, as Spark reads them) and their defaults.
OPTION_DEFAULTS: dict[str, str] = {
    "mode": "FAILFAST",
    "recursive.fields.max.depth": "-1",
    "convert.any.fields.to.json": "false",
    "emit.default.values": "false",
    "enums.as.ints": "false",
    "upcast.unsigned.ints": "false",
    "unwrap.primitive.wrapper.types": "false",
    "retain.empty.message.types": "false",
}

# The field Spark puts in a message that has none left, since a Spark struct cannot be empty.
EMPTY_STRUCT_FIELD = "__dummy_field_in_empty_struct"
_MAX_RECURSION = 10
WRAPPERS = frozenset(f"google.protobuf.{n}Value"
                      for n in ("Bool", "Int32", "UInt32", "Int64", "UInt64", "String", "Bytes", "Float", "Double"))
_INT64 = (-(1 << 63), 1 << 63)

Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class ProtobufOptions:
    """Spark's `from_protobuf` options (see OPTION_DEFAULTS for their names)."""

    mode: str = "FAILFAST"
    recursive_fields_max_depth: int = -1
    convert_any_fields_to_json: bool = False
    emit_default_values: bool = False
    enums_as_ints: bool = False
    upcast_unsigned_ints: bool = False
    unwrap_primitive_wrapper_types: bool = False
    retain_empty_message_types: bool = False


def protobuf_options(options: Mapping[str, str] | None) -> ProtobufOptions:
    """Options as Spark's `from_protobuf` takes them; ConfigError for an unknown name or a bad value."""
    given = {k.lower(): str(v) for k, v in (options or {}).items()}
    unknown = sorted(set(given) - set(OPTION_DEFAULTS))
    if unknown:
        raise ConfigError(f"unknown Protobuf option(s) {unknown}; known: {sorted(OPTION_DEFAULTS)}")
    values = {**OPTION_DEFAULTS, **given}
    mode = values["mode"].upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise ConfigError(f"Protobuf option mode must be FAILFAST or PERMISSIVE, not {values['mode']!r}")
    try:
        depth = int(values["recursive.fields.max.depth"])
    except ValueError:
        raise ConfigError(f"Protobuf option recursive.fields.max.depth must be an integer, "
                          f"not {values['recursive.fields.max.depth']!r}") from None
    flags = {}
    for name in OPTION_DEFAULTS:
        if name in ("mode", "recursive.fields.max.depth"):
            continue
        text = values[name].lower()
        if text not in ("true", "false"):
            raise ConfigError(f"Protobuf option {name} must be true or false, not {values[name]!r}")
        flags[name.replace(".", "_")] = text == "true"
    return ProtobufOptions(mode=mode, recursive_fields_max_depth=depth, **flags)


@dataclass(frozen=True)
class StructPlan:
    """A message's Arrow struct type and the converter of its parsed messages into dicts of that type."""

    arrow_type: pa.StructType
    convert: Callable[[Message], dict[str, Any]]


def message_plan(descriptor: Descriptor, options: ProtobufOptions) -> StructPlan:
    """The plan of a top-level message: Spark keeps it as a (possibly empty) struct; ConfigError when the
    message is recursive and the options do not allow it."""
    plan = _Planner(options).struct(descriptor, {descriptor.full_name: 1}, root=True)
    assert plan is not None
    return plan


def signed32(value: int) -> int:
    """An unsigned 32-bit value as the signed int Spark reads it as."""
    return value - 0x1_0000_0000 if value > 0x7FFF_FFFF else value


def signed64(value: int) -> int:
    """An unsigned 64-bit value as the signed long Spark reads it as."""
    return value - 0x1_0000_0000_0000_0000 if value > 0x7FFF_FFFF_FFFF_FFFF else value


def micros(message: Any) -> int:
    """A Timestamp or Duration (seconds, nanos) in microseconds, the nanos truncated as Spark does."""
    nanos = message.nanos
    value = message.seconds * 1_000_000 + (nanos // 1000 if nanos >= 0 else -(-nanos // 1000))
    if not _INT64[0] <= value < _INT64[1]:
        raise PayloadError(f"{message.DESCRIPTOR.full_name} of {message.seconds} s is out of range")
    return value


def is_time_message(descriptor: Descriptor, name: str) -> bool:
    """Spark's test for Timestamp and Duration: the simple name and the fields (seconds, nanos)."""
    fields = descriptor.fields
    return (descriptor.name == name and len(fields) == 2
            and fields[0].name == "seconds" and fields[1].name == "nanos")


def is_map(field: FieldDescriptor) -> bool:
    """Whether `field` is a map (a repeated field of a map-entry message)."""
    return (field.is_repeated and field.message_type is not None
            and field.message_type.GetOptions().map_entry)


class _Planner:
    def __init__(self, options: ProtobufOptions) -> None:
        self.options = options

    def struct(self, descriptor: Descriptor, seen: dict[str, int], root: bool = False) -> StructPlan | None:
        fields: list[pa.Field] = []
        reads: list[_Read] = []
        for field in descriptor.fields:
            planned = self.field(field, seen)
            if planned is None:
                continue
            fields.append(pa.field(field.name, planned.arrow))
            reads.append(planned)
        if not fields and self.options.retain_empty_message_types:
            empty = {EMPTY_STRUCT_FIELD: None}
            return StructPlan(pa.struct([pa.field(EMPTY_STRUCT_FIELD, pa.string())]), lambda _: dict(empty))
        if not fields and not root:
            return None
        return StructPlan(pa.struct(fields), _struct_converter(descriptor.full_name, reads))

    def field(self, field: FieldDescriptor, seen: dict[str, int]) -> _Read | None:
        """How Spark reads `field`; None when it drops the field."""
        if is_map(field):
            entry = field.message_type
            key = self.value(entry.fields_by_name["key"], seen)
            value = self.value(entry.fields_by_name["value"], seen)
            if key is None or value is None:
                return None
            return _Read(field.name, pa.map_(key[0], value[0]), "map", _map_converter(key[1], value[1]))
        planned = self.value(field, seen)
        if planned is None:
            return None
        arrow, convert = planned
        if field.is_repeated:
            return _Read(field.name, pa.list_(arrow), "repeated", convert)
        if field.has_presence:
            # a proto2 field with a declared default reads as that default when it is not set
            absent = _converted(convert, field.default_value) if field.has_default_value else None
            return _Read(field.name, arrow, "presence", convert, absent)
        if self.options.emit_default_values:
            return _Read(field.name, arrow, "always", convert)
        float_kind = field.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE)
        return _Read(field.name, arrow, "float" if float_kind else "nonzero", convert)

    def value(self, field: FieldDescriptor, seen: dict[str, int]) -> tuple[pa.DataType, Convert | None] | None:
        """One value of `field` (an element when repeated): its Arrow type and converter."""
        o = self.options
        kind = field.type
        if kind in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
            return pa.int32(), None
        if kind == FieldDescriptor.TYPE_UINT32:
            return (pa.int64(), None) if o.upcast_unsigned_ints else (pa.int32(), signed32)
        if kind == FieldDescriptor.TYPE_FIXED32:
            return pa.int32(), signed32
        if kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
            return pa.int64(), None
        if kind == FieldDescriptor.TYPE_UINT64:
            return (pa.decimal128(20, 0), decimal.Decimal) if o.upcast_unsigned_ints else (pa.int64(), signed64)
        if kind == FieldDescriptor.TYPE_FIXED64:
            return pa.int64(), signed64
        if kind == FieldDescriptor.TYPE_FLOAT:
            return pa.float32(), None
        if kind == FieldDescriptor.TYPE_DOUBLE:
            return pa.float64(), None
        if kind == FieldDescriptor.TYPE_BOOL:
            return pa.bool_(), None
        if kind == FieldDescriptor.TYPE_STRING:
            return pa.string(), None
        if kind == FieldDescriptor.TYPE_BYTES:
            return pa.binary(), None
        if kind == FieldDescriptor.TYPE_ENUM:
            return (pa.int32(), None) if o.enums_as_ints else (pa.string(), _enum_names(field))
        return self.message(field, seen)

    def message(self, field: FieldDescriptor, seen: dict[str, int]) -> tuple[pa.DataType, Convert | None] | None:
        o = self.options
        descriptor = field.message_type
        name = descriptor.full_name
        if is_time_message(descriptor, "Duration"):
            return pa.duration("us"), micros
        if is_time_message(descriptor, "Timestamp"):
            return pa.timestamp("us", tz="UTC"), micros
        if name == "google.protobuf.Any" and o.convert_any_fields_to_json:
            return pa.string(), _any_to_json(o.enums_as_ints)
        if name in WRAPPERS and o.unwrap_primitive_wrapper_types:
            inner = self.value(descriptor.fields_by_name["value"], seen)
            assert inner is not None
            return inner[0], _unwrap(inner[1], descriptor.fields_by_name["value"].default_value,
                                     o.emit_default_values)
        depth = seen.get(name, 0)
        if name in seen:
            limit = o.recursive_fields_max_depth
            if limit <= 0 or limit > _MAX_RECURSION:
                raise ConfigError(f"Protobuf message {name} is recursive (field {field.full_name}); Spark refuses "
                                  f"recursion unless recursive.fields.max.depth is 1..{_MAX_RECURSION}")
            if depth >= limit:
                return None
        plan = self.struct(descriptor, {**seen, name: depth + 1})
        return None if plan is None else (plan.arrow_type, plan.convert)


def _converted(convert: Convert | None, value: Any) -> Any:
    return value if convert is None else convert(value)


@dataclass(frozen=True)
class _Read:
    """How one field is read: `kind` is "repeated" or "map" (always a list), "presence" (the converted
    value when set, else `absent`), "nonzero" / "float" (a proto3 scalar without presence: null when it
    holds its zero value, which the wire format does not carry; -0.0 is carried) or "always"."""

    name: str
    arrow: pa.DataType
    kind: str
    convert: Convert | None
    absent: Any = None


def _struct_converter(message_name: str, reads: list[_Read]) -> Callable[[Message], dict[str, Any]]:
    # One generated function per message type reads its fields with attribute access and HasField: several
    # times faster than ListFields or a closure per field.
    scope: dict[str, Any] = {"_copysign": math.copysign}
    items = []
    for i, read in enumerate(reads):
        scope[f"_c{i}"] = read.convert
        scope[f"_a{i}"] = read.absent
        attr = f"getattr(m, {read.name!r})" if keyword.iskeyword(read.name) else f"m.{read.name}"
        value = "_v" if read.convert is None else f"_c{i}(_v)"
        if read.kind in ("repeated", "map"):
            if read.convert is None:
                expr = f"list({attr})"
            elif read.kind == "map":
                expr = f"_c{i}({attr})"
            else:
                expr = f"[_c{i}(_v) for _v in {attr}]"
        elif read.kind == "presence":
            get = attr if read.convert is None else f"_c{i}({attr})"
            expr = f"({get} if m.HasField({read.name!r}) else _a{i})"
        elif read.kind == "always":
            expr = attr if read.convert is None else f"_c{i}({attr})"
        elif read.kind == "float":
            expr = f"({value} if (_v := {attr}) or _copysign(1.0, _v) < 0 else None)"
        else:
            expr = f"({value} if (_v := {attr}) else None)"
        items.append(f"{read.name!r}: {expr}")
    source = "def convert(m):\n    return {" + ", ".join(items) + "}\n"
    exec(compile(source, f"<protobuf reader of {message_name}>", "exec"), scope)
    convert: Callable[[Message], dict[str, Any]] = scope["convert"]
    return convert


def _map_converter(key: Convert | None, value: Convert | None) -> Convert:
    # Entries sorted by their (converted) key: protobuf's Python maps iterate in the order of their hash table,
    # which no other reader can reproduce (the column-wise path, protobuf/columnar.py, sorts the same way).
    # Indexing by key is twice as fast as the generic items() of protobuf's map containers.
    if key is None and value is None:
        return lambda m: [(k, m[k]) for k in sorted(m)]
    if key is None:
        return lambda m: [(k, value(m[k])) for k in sorted(m)]  # type: ignore[misc]
    if value is None:
        return lambda m: sorted([(key(k), m[k]) for k in m], key=_first)
    return lambda m: sorted([(key(k), value(m[k])) for k in m], key=_first)


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _enum_names(field: FieldDescriptor) -> Convert:
    enum = field.enum_type
    names = {v.number: v.name for v in reversed(enum.values)}  # the first name of an aliased number

    def name(number: int) -> str:
        found = names.get(number)
        # Java names a number its enum does not declare this way, and Spark passes that name on.
        return found if found is not None else f"UNKNOWN_ENUM_VALUE_{enum.name}_{number}"

    return name


def _unwrap(inner: Convert | None, default: Any, emit_defaults: bool) -> Convert:
    absent = _converted(inner, default) if emit_defaults else None

    def unwrap(message: Message) -> Any:
        fields = message.ListFields()
        if not fields:
            return absent
        return _converted(inner, fields[0][1])

    return unwrap


def _any_to_json(enums_as_ints: bool) -> Convert:
    def to_json(message: Message) -> str:
        try:
            data = json_format.MessageToDict(message, preserving_proto_field_name=True,
                                             use_integers_for_enums=enums_as_ints,
                                             descriptor_pool=message.DESCRIPTOR.file.pool)
        except Exception as exc:  # json_format raises TypeError, KeyError, its Error, ... for unknown types
            raise PayloadError(f"google.protobuf.Any holding {message.type_url!r} does not convert to "
                               f"JSON: {exc}") from exc
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    return to_json
