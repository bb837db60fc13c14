"""Compile field declarations for one version into decode/encode closures.

A `Plan` is built once per (message, version) and reused: runs of fixed-width fields become a
single `struct.Struct`, arrays check their count against the bytes left before allocating, and
``records`` fields come back as memoryview slices of the input (no copy).
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from kafka_spark.errors import DecodeError
from kafka_spark.protocol.primitives import (
    FIXED_CODES,
    FIXED_SIZES,
    INT8,
    EncodeError,
    make_bytes_reader,
    make_string_reader,
    read_array_len,
    read_uuid,
    read_uvarint,
    write_array_len,
    write_bytes,
    write_string,
    write_uuid,
    write_uvarint,
)
from kafka_spark.protocol.schema import Field

UNKNOWN_TAGS = "_unknown_tags"
"""Key under which decoded values keep tagged fields this package does not know, {tag: bytes}."""

Reader = Callable[[memoryview, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]
_MISSING: Any = object()


class Plan(NamedTuple):
    """The compiled form of one struct at one version."""

    decode: Reader
    encode: Writer
    min_size: int


def compile_struct(fields: Sequence[Field], version: int, flexible: bool) -> Plan:
    """Compile `fields` for `version`; `flexible` selects compact types and tagged fields."""
    present = [f for f in fields if version in f.versions]
    regular = [f for f in present if not (flexible and version in f.tagged)]
    tagged = sorted((f for f in present if flexible and version in f.tagged), key=lambda f: f.tag or 0)
    # every declared field appears in decoded values; absent ones carry their default
    regular_ids = {id(f) for f in regular}
    fill = [f for f in fields if id(f) not in regular_ids]
    static_fill = {f.name: f.default for f in fill if not isinstance(f.default, (list, dict))}
    fresh_fill = [(f.name, default_factory(f.default)) for f in fill if isinstance(f.default, (list, dict))]

    read_ops, write_ops, min_size = _regular_ops(regular, version, flexible)
    read_tags = _tag_reader(tagged, version) if flexible else None
    write_tags = _tag_writer(tagged, version) if flexible else None
    if flexible:
        min_size += 1

    def decode(buf: memoryview, pos: int) -> tuple[dict[str, Any], int]:
        out = dict(static_fill)
        for name, factory in fresh_fill:
            out[name] = factory()
        for op in read_ops:
            pos = op(buf, pos, out)
        if read_tags is not None:
            pos = read_tags(buf, pos, out)
        return out, pos

    def encode(out: bytearray, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise EncodeError(f"expected a mapping for a struct, got {type(value).__name__}")
        get = value.get
        for op in write_ops:
            op(out, get)
        if write_tags is not None:
            write_tags(out, value)

    return Plan(decode, encode, min_size)


def default_factory(default: list | dict) -> Callable[[], Any]:
    """A cheap maker of fresh copies of a mutable default (decoded values never share it)."""
    if isinstance(default, list) and not default:
        return list
    if isinstance(default, dict) and not any(isinstance(v, (list, dict)) for v in default.values()):
        return default.copy
    return lambda: copy.deepcopy(default)


def _regular_ops(fields: list[Field], version: int, flexible: bool) -> tuple[list, list, int]:
    """Build read/write ops for the untagged fields, merging runs of fixed-width fields."""
    read_ops: list = []
    write_ops: list = []
    min_size = 0
    run: list[Field] = []

    def flush() -> None:
        if run:
            r, w = _fixed_run_ops(list(run))
            read_ops.append(r)
            write_ops.append(w)
            run.clear()

    for f in fields:
        if f.type in FIXED_CODES:
            run.append(f)
            min_size += FIXED_SIZES[f.type]
            continue
        flush()
        reader, writer, size = field_codec(f, version, flexible)
        read_ops.append(_named_read(f.name, reader))
        write_ops.append(_named_write(f.name, f.default, writer))
        min_size += size
    flush()
    return read_ops, write_ops, min_size


def _fixed_run_ops(run: list[Field]) -> tuple[Callable, Callable]:
    fmt = struct.Struct(">" + "".join(FIXED_CODES[f.type] for f in run))
    size = fmt.size
    unpack = fmt.unpack_from
    pack = fmt.pack
    names = tuple(f.name for f in run)
    pairs = tuple((f.name, f.default) for f in run)

    if len(run) == 1:
        name, default = pairs[0]

        def read_one(buf: memoryview, pos: int, out: dict) -> int:
            out[name] = unpack(buf, pos)[0]
            return pos + size

        def write_one(out: bytearray, get: Callable) -> None:
            try:
                out += pack(get(name, default))
            except struct.error as exc:
                raise EncodeError(f"field {name!r}: {exc}") from None

        return read_one, write_one

    def read_run(buf: memoryview, pos: int, out: dict) -> int:
        out.update(zip(names, unpack(buf, pos), strict=True))
        return pos + size

    def write_run(out: bytearray, get: Callable) -> None:
        try:
            out += pack(*[get(n, d) for n, d in pairs])
        except struct.error as exc:
            raise EncodeError(f"one of fields {names}: {exc}") from None

    return read_run, write_run


def _named_read(name: str, reader: Reader) -> Callable:
    def op(buf: memoryview, pos: int, out: dict) -> int:
        out[name], pos = reader(buf, pos)
        return pos

    return op


def _named_write(name: str, default: Any, writer: Writer) -> Callable:
    def op(out: bytearray, get: Callable) -> None:
        try:
            writer(out, get(name, default))
        except EncodeError as exc:
            raise EncodeError(f"field {name!r}: {exc}") from None

    return op


def field_codec(f: Field, version: int, flexible: bool) -> tuple[Reader, Writer, int]:
    """Reader, writer and minimum encoded size of one field value at `version`."""
    nullable = version in f.nullable
    t = f.type
    if t in FIXED_CODES:
        return _fixed_codec(t)
    if t == "string":
        return (
            make_string_reader(flexible, nullable),
            lambda out, v: write_string(out, v, flexible, nullable),
            1 if flexible else 2,
        )
    if t in ("bytes", "records"):
        return (
            make_bytes_reader(flexible, nullable, zero_copy=t == "records"),
            lambda out, v: write_bytes(out, v, flexible, nullable, by_reference=t == "records"),
            1 if flexible else 4,
        )
    if t == "uuid":
        return read_uuid, write_uuid, 16
    if t == "struct":
        return _struct_codec(f, version, flexible, nullable)
    if t == "[]struct":
        plan = compile_struct(f.fields, version, flexible)
        return _array_codec(plan.decode, plan.encode, max(1, plan.min_size), flexible, nullable)
    if t.startswith("[]"):
        elem = t[2:]
        if elem in FIXED_CODES:
            return _fixed_array_codec(elem, flexible, nullable)
        reader, writer, size = field_codec(Field(f.name, elem, f.versions), version, flexible)
        return _array_codec(reader, writer, size, flexible, nullable)
    raise ValueError(f"field {f.name!r}: unsupported type {t!r}")


def _fixed_codec(type_: str) -> tuple[Reader, Writer, int]:
    fmt = struct.Struct(">" + FIXED_CODES[type_])
    unpack = fmt.unpack_from
    pack = fmt.pack
    size = fmt.size

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + size

    def write(out: bytearray, value: Any) -> None:
        try:
            out += pack(value)
        except struct.error as exc:
            raise EncodeError(str(exc)) from None

    return read, write, size


def _struct_codec(f: Field, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer, int]:
    plan = compile_struct(f.fields, version, flexible)
    if not nullable:
        return plan.decode, plan.encode, plan.min_size
    # a nullable struct carries an int8 marker: -1 for null, 1 for present
    inner_decode = plan.decode
    inner_encode = plan.encode

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        marker = INT8.unpack_from(buf, pos)[0]
        if marker < 0:
            return None, pos + 1
        return inner_decode(buf, pos + 1)

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            out.append(0xFF)
            return
        out.append(1)
        inner_encode(out, value)

    return read, write, 1


def _array_codec(
    read_item: Reader, write_item: Writer, min_item: int, compact: bool, nullable: bool
) -> tuple[Reader, Writer, int]:
    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_array_len(buf, pos, compact, nullable, min_item)
        if n < 0:
            return None, pos
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            item, pos = read_item(buf, pos)
            append(item)
        return items, pos

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            write_array_len(out, None, compact, nullable)
            return
        if isinstance(value, (str, bytes, Mapping)):
            raise EncodeError(f"expected a sequence, got {type(value).__name__}")
        write_array_len(out, len(value), compact, nullable)
        for item in value:
            write_item(out, item)

    return read, write, 1 if compact else 4


def _fixed_array_codec(elem: str, compact: bool, nullable: bool) -> tuple[Reader, Writer, int]:
    code = FIXED_CODES[elem]
    size = FIXED_SIZES[elem]

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_array_len(buf, pos, compact, nullable, size)
        if n <= 0:
            return (None if n < 0 else []), pos
        return list(struct.unpack_from(f">{n}{code}", buf, pos)), pos + n * size

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            write_array_len(out, None, compact, nullable)
            return
        write_array_len(out, len(value), compact, nullable)
        try:
            out += struct.pack(f">{len(value)}{code}", *value)
        except struct.error as exc:
            raise EncodeError(str(exc)) from None

    return read, write, 1 if compact else 4


def _tag_reader(tagged: list[Field], version: int) -> Callable:
    readers: dict[int, tuple[str, Reader]] = {
        f.tag: (f.name, field_codec(f, version, True)[0]) for f in tagged if f.tag is not None
    }

    def read_tags(buf: memoryview, pos: int, out: dict) -> int:
        n, pos = read_uvarint(buf, pos)
        if n * 2 > len(buf) - pos:
            raise DecodeError(f"{n} tagged fields at offset {pos} exceed the {len(buf) - pos} bytes left")
        for _ in range(n):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise DecodeError(f"tagged field {tag} of {size} bytes at offset {pos} runs past the end")
            entry = readers.get(tag)
            if entry is None:
                out.setdefault(UNKNOWN_TAGS, {})[tag] = bytes(buf[pos:end])
            else:
                name, reader = entry
                # bound the reader to the declared size so it cannot run into the next field
                out[name], used = reader(buf[:end], pos)
                if used != end:
                    raise DecodeError(f"tagged field {tag} declares {size} bytes but holds {used - pos}")
            pos = end
        return pos

    return read_tags


def _is_default_check(f: Field) -> Callable[[Any], bool]:
    if f.type == "struct" and isinstance(f.default, dict):
        pairs = [(sub.name, sub.default) for sub in f.fields]

        def struct_is_default(value: Any) -> bool:
            if not isinstance(value, Mapping):
                return value is None and f.default is None
            return all(value.get(n, d) == d for n, d in pairs)

        return struct_is_default
    default = f.default
    return lambda value: value == default and type(value) is type(default)


def _tag_writer(tagged: list[Field], version: int) -> Callable:
    writers = [
        (f.tag, f.name, _is_default_check(f), field_codec(f, version, True)[1]) for f in tagged if f.tag is not None
    ]

    def write_tags(out: bytearray, value: Mapping) -> None:
        items: list[tuple[int, bytes | bytearray]] = []
        for tag, name, is_default, writer in writers:
            v = value.get(name, _MISSING)
            if v is _MISSING or is_default(v):
                continue
            payload = bytearray()
            try:
                writer(payload, v)
            except EncodeError as exc:
                raise EncodeError(f"tagged field {name!r}: {exc}") from None
            items.append((tag, payload))
        unknown = value.get(UNKNOWN_TAGS)
        if unknown:
            known = {t for t, _ in items}
            items.extend((int(t), bytes(p)) for t, p in unknown.items() if t not in known)
            items.sort(key=lambda item: item[0])
        write_uvarint(out, len(items))
        for tag, data in items:
            write_uvarint(out, tag)
            write_uvarint(out, len(data))
            out += data

    return write_tags
