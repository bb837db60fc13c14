"""Avro payloads (Confluent framing already removed) to values of spark-avro's Arrow type, and back.

Decoding reads with fastavro's `schemaless_reader` and Avro schema resolution from the writer schema (looked up
by id, parsed once per id) to the query's reader schema; the type mapping and value conversion live in
`avro_types`. Bytes after the record are ignored, as Confluent's deserializers and Spark's `from_avro` do.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa
from fastavro import _write_py
from fastavro.io.binary_encoder import BinaryEncoder
from fastavro.read import SchemaResolutionError
from fastavro.validation import ValidationError

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.avro.defaults import convert_defaults
from kafka_spark.formats.avro.guard import StrictPayload, blind_skips, guarded_read, risks
from kafka_spark.formats.avro.types import (
    LOGICAL,
    Convert,
    avro_options,
    base_type,
    day_time_interval,
    definition,
    named_type,
    normalize,
    reader_mapping,
    valid_decimal,
)
from kafka_spark.formats.avro.writer_schema import avro_schema_for
from kafka_spark.formats.cache import WriterCache
from kafka_spark.formats.model import PayloadDecoder, PayloadEncoder, RegisteredSchema, SchemaSource, find_writer

__all__ = ["AvroDecoder", "avro_decoder", "avro_encoder", "avro_schema_for", "parse_registered"]

# fastavro's compiled reader recurses on the C stack, one level of a recursive schema per byte at least, and
# crashed near 4,600 levels on an 8 MiB stack: longer payloads of recursive writers go to the pure-Python reader,
# which stops at Python's recursion limit instead.
_C_NESTING_BYTES = 512
# an object's default repr, as fastavro names the buffer it read in some messages
_ADDRESS = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
# The logical types fastavro converts when writing, from the values Arrow's to_pylist gives; decimals are
# converted here, where a value that does not fit can be named.
_WRITE_LOGICAL = frozenset({("int", "date"), ("long", "timestamp-millis"), ("long", "timestamp-micros"),
                            ("long", "local-timestamp-millis"), ("long", "local-timestamp-micros"),
                            ("long", "time-micros")})


class _FieldError(PayloadError):
    """A value that does not fit, inside the record field at `path`."""

    def __init__(self, path: list[str], reason: str) -> None:
        super().__init__(f"field {'.'.join(path)}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class _Parsed:
    schema: Any  # fastavro-parsed
    named: dict[str, Any]  # full name -> parsed named type


def _parse(root: RegisteredSchema, source: SchemaSource, keep: frozenset[tuple[str, str]]) -> _Parsed:
    """`root` and the schemas it references (through `source`, recursively, each once), parsed together;
    ValueError naming what does not parse."""
    texts: list[str] = []
    seen: set[tuple[str, int]] = set()

    def visit(schema: RegisteredSchema) -> None:
        for ref in schema.references:
            if (ref.subject, ref.version) not in seen:
                seen.add((ref.subject, ref.version))
                visit(source.by_reference(ref))
        texts.append(schema.schema)

    visit(root)
    named: dict[str, Any] = {}
    parsed: Any = None
    for i, text in enumerate(texts):
        what = "the schema" if i == len(texts) - 1 else "a referenced schema"
        try:
            parsed = fastavro.parse_schema(normalize(json.loads(text), keep), named_schemas=named)
        except Exception as exc:  # fastavro raises many kinds for a bad schema
            raise ValueError(f"{what} does not parse as Avro: {exc}") from None
    convert_defaults(parsed, named)
    return _Parsed(parsed, named)


_NAME = re.compile(r"'name': '([^']+)'")


def _mismatch(text: str) -> str:
    """fastavro's resolution error without the two whole schemas it prints (kilobytes for a real record)."""
    if not text.startswith("Schema mismatch:") or " is not " not in text:
        return text[:500]
    names = [_NAME.search(side) for side in text.split(" is not ", 1)]
    if not all(names):
        return "the writer's schema does not resolve to the reader's by Avro's rules"
    writer, reader = (m.group(1) for m in names if m)
    why = (" (named types resolve only when their names match)"
           if writer.rsplit(".", 1)[-1] != reader.rsplit(".", 1)[-1] else "")
    return f"the writer's {writer!r} does not resolve to the reader's {reader!r} by Avro's rules{why}"


def parse_registered(schema: RegisteredSchema) -> tuple[Any, dict[str, Any]]:
    """A schema without references parsed as the decoder parses it: (schema, named types); ValueError if it
    does not parse."""
    if schema.references:
        raise ValueError("a schema with references")
    parsed = _parse(schema, _NoReferences(), frozenset())
    return parsed.schema, parsed.named


class _NoReferences:
    def by_id(self, schema_id: int) -> RegisteredSchema:
        raise ValueError("no schema source")

    def by_reference(self, reference: Any) -> RegisteredSchema:
        raise ValueError("no schema source")


def _describe(schema: RegisteredSchema) -> str:
    parts = [f"subject {schema.subject!r}" if schema.subject else "", f"version {schema.version}"
             if schema.version is not None else "", f"id {schema.id}" if schema.id is not None else ""]
    return " ".join(p for p in parts if p) or "the inline schema"


# ---- decoding --------------------------------------------------------------------------------------

def avro_decoder(reader: RegisteredSchema, source: SchemaSource,
                 options: Mapping[str, str] | None = None) -> PayloadDecoder:
    """A decoder of Avro payloads written with any registered schema into values of `reader`'s Arrow type.

    `options` are spark-avro's `recursiveFieldMaxDepth` (default -1: recursive schemas refused),
    `enableStableIdentifiersForUnionType` (false) and `stableIdentifierPrefixForUnionType` (`member_`);
    other keys are ignored. ConfigError when `reader` does not parse or Spark has no type for it.
    """
    return AvroDecoder(reader, source, options)


class AvroDecoder:
    """Decodes Avro payloads into values of spark-avro's Arrow type of a reader schema.

    `decode` returns what `pa.array(values, type=arrow_type)` takes fastest: dicts for records, dicts for maps,
    lists for arrays, `{memberN: ...}` dicts for unions Spark makes structs of, strings for enums and uuids,
    `Decimal` for decimals, and ints for the rest of the logical types (days since the epoch for dates,
    microseconds since the epoch for timestamps, nanoseconds of the day for time-micros).
    """

    def __init__(self, reader: RegisteredSchema, source: SchemaSource,
                 options: Mapping[str, str] | None = None) -> None:
        self.reader = reader
        self._source = source
        try:
            self._reader = _parse(reader, source, frozenset())
        except ValueError as exc:
            raise ConfigError(f"Avro reader schema {_describe(reader)}: {exc}") from None
        mapping = reader_mapping(self._reader.schema, self._reader.named, avro_options(options))
        self.arrow_type: pa.DataType = mapping.arrow_type
        self._convert = mapping.convert
        self._named_types = mapping.named_types
        self._reads = WriterCache(self._read_function)

    def decode(self, schema_id: int, indexes: tuple[int, ...], payload: bytes) -> Any:
        """One payload as a value of `arrow_type`; PayloadError naming the writer schema id and the reason."""
        read = self._reads.ready.get(schema_id) or self._reads(schema_id)
        try:
            return read(payload)
        except Exception as exc:  # any failure on these bytes is the record's
            raise self._error(schema_id, exc) from None

    def _error(self, schema_id: int, exc: Exception) -> PayloadError:
        if isinstance(exc, PayloadError):
            return PayloadError(f"Avro payload of writer schema id {schema_id}: {exc}")
        if isinstance(exc, SchemaResolutionError):
            return PayloadError(f"writer schema id {schema_id} cannot be read with the query's schema "
                                f"({_describe(self.reader)}): {_mismatch(str(exc))}")
        if isinstance(exc, RecursionError):
            return PayloadError(f"Avro payload of writer schema id {schema_id} nests deeper than can be decoded")
        # fastavro names the buffer it read by its repr, an address that differs per call: the same record must
        # give the same reason in every run (errors columns, dead letters, a re-run batch)
        text = _ADDRESS.sub("the payload", str(exc))
        reason = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        return PayloadError(f"corrupt or truncated Avro payload of writer schema id {schema_id} ({reason})")

    def parsed_reader(self) -> tuple[Any, dict[str, Any]]:
        """The reader schema as parsed for decoding (logical types moved aside by `normalize`) and its named
        types, for the block path's resolution (`columnar`)."""
        return self._reader.schema, self._reader.named

    def prepare(self, schema_id: int) -> None:
        """Look writer `schema_id` up as `decode` does (kept the same way): PayloadError when its payloads cannot
        be read, SchemaRegistryError when the registry cannot be asked."""
        if schema_id not in self._reads.ready:
            self._reads(schema_id)

    def writer_text(self, schema_id: int) -> RegisteredSchema | None:
        """The registered writer schema of `schema_id` (None when the registry has none)."""
        return self.reader if schema_id == self.reader.id else find_writer(self._source, schema_id)

    def _read_function(self, schema_id: int) -> Callable[[bytes], Any]:
        """How payloads of writer `schema_id` are read; PayloadError (kept for the id) when they cannot be."""
        if schema_id == self.reader.id:
            return _read_function(self._reader, None, self._convert, self._named_types)
        writer = find_writer(self._source, schema_id)
        if writer is None:
            raise PayloadError(f"schema id {schema_id} is not in the schema registry")
        if writer.schema_type != "AVRO":
            raise PayloadError(f"schema id {schema_id} is a {writer.schema_type} schema, not Avro")
        try:
            parsed = _parse(writer, self._source, frozenset())
        except ValueError as exc:
            raise PayloadError(f"writer schema id {schema_id}: {exc}") from None
        reader = None if parsed.schema == self._reader.schema else self._reader
        return _read_function(parsed, reader, self._convert, self._named_types)


def _read_function(writer: _Parsed, reader: _Parsed | None, convert: Convert | None,
                   named_types: bool) -> Callable[[bytes], Any]:
    recursive, unbounded = risks(writer.schema, writer.named)
    # fastavro's schemaless_reader parses its schemas again, and only a record carries the named types it
    # was parsed with: a union or a named reference at the top needs them given
    unnamed = any(not isinstance(p.schema, dict) and p.named for p in (writer, reader) if p is not None)
    # a reader schema that differs can make fastavro skip writer fields, and its skips need a strict buffer
    buffer = StrictPayload if reader is not None and blind_skips(writer.schema, writer.named) else io.BytesIO
    if not (unbounded or unnamed or recursive):
        return _fast_read(writer, reader, named_types, convert, buffer)
    guarded = guarded_read(writer.schema, writer.named, None if reader is None else reader.schema,
                           {} if reader is None else reader.named, named_types)
    if unbounded or unnamed:
        read = guarded
    else:
        fast = _fast_read(writer, reader, named_types, None, buffer)

        def read(payload: bytes) -> Any:
            return fast(payload) if len(payload) <= _C_NESTING_BYTES else guarded(payload)
    if convert is None:
        return read

    def read_converted(payload: bytes) -> Any:
        value = read(payload)
        return None if value is None else convert(value)

    return read_converted


def _fast_read(writer: _Parsed, reader: _Parsed | None, named_types: bool, convert: Convert | None,
               buffer: Callable[[bytes], io.BytesIO] = io.BytesIO) -> Callable[[bytes], Any]:
    """fastavro's compiled reader, the values converted; one closure, as this is the cost of every record."""
    schemaless_reader = fastavro.schemaless_reader
    w, r = writer.schema, None if reader is None else reader.schema
    if convert is None:
        if named_types:
            return lambda payload: schemaless_reader(buffer(payload), w, r, return_named_type=True)
        return lambda payload: schemaless_reader(buffer(payload), w, r)

    def read(payload: bytes) -> Any:
        value = schemaless_reader(buffer(payload), w, r, return_named_type=named_types)
        return None if value is None else convert(value)

    return read


# ---- encoding --------------------------------------------------------------------------------------

def avro_encoder(writer: RegisteredSchema, source: SchemaSource) -> PayloadEncoder:
    """An encoder of column values (as `pa.Array.to_pylist()` gives them for spark-avro's Arrow type of
    `writer`, or for the type `avro_schema_for` was given) into Avro payloads of `writer`."""
    return AvroEncoder(writer, source)


class AvroEncoder:
    """Encodes values with one registered Avro writer schema, through fastavro's `schemaless_writer`."""

    def __init__(self, writer: RegisteredSchema, source: SchemaSource) -> None:
        self.schema = writer
        try:
            self._parsed = _parse(writer, source, _WRITE_LOGICAL)
        except ValueError as exc:
            raise ConfigError(f"Avro writer schema {_describe(writer)}: {exc}") from None
        self._convert = _WriteWalk(self._parsed.named).walk(self._parsed.schema)
        # as when reading: a union or named reference at the top loses the named types fastavro parsed it with
        self._unnamed = not isinstance(self._parsed.schema, dict) and bool(self._parsed.named)

    def parsed_writer(self) -> tuple[Any, dict[str, Any]]:
        """The writer schema as parsed for encoding (fastavro-parsed, `normalize`d keeping the logical types
        fastavro writes) and its named types, for the column-wise path (`column_encode`)."""
        return self._parsed.schema, self._parsed.named

    def encode(self, value: Any) -> tuple[tuple[int, ...], bytes]:
        """((), payload) for `value`; PayloadError naming the field that does not fit the schema."""
        buffer = io.BytesIO()
        try:
            datum = value if self._convert is None or value is None else self._convert(value)
            if self._unnamed:
                encoder = BinaryEncoder(buffer)
                _write_py.write_data(encoder, datum, self._parsed.schema, dict(self._parsed.named), "", {})
                encoder.flush()
            else:
                fastavro.schemaless_writer(buffer, self._parsed.schema, datum)
        except Exception as exc:  # any failure is the value's
            raise PayloadError(f"value does not fit Avro schema {_describe(self.schema)}: "
                               f"{self._reason(value, exc)}") from None
        return (), buffer.getvalue()

    def _reason(self, value: Any, exc: Exception) -> str:
        if isinstance(exc, PayloadError):
            return str(exc)  # names the field already
        try:
            datum = value if self._convert is None or value is None else self._convert(value)
            fastavro.validation.validate(datum, self._parsed.schema, raise_errors=True)
        except ValidationError as invalid:
            return "; ".join(str(e) for e in invalid.errors) or str(invalid)
        except Exception:  # the writer's own reason follows
            pass
        return f"{type(exc).__name__}: {exc}"


class _WriteWalk:
    """Converters from to_pylist values to what fastavro writes: maps from (key, value) pairs, unions from
    their `{memberN: ...}` structs, decimals to bytes, Spark's day-time intervals from timedeltas."""

    def __init__(self, named: Mapping[str, Any]) -> None:
        self.named = named
        self.records: dict[str, list[Convert | None]] = {}  # name -> [converter], filled once built

    def walk(self, node: Any) -> Convert | None:
        node = definition(node, self.named)
        if isinstance(node, list):
            return self._union(node)
        if isinstance(node, str):
            return None
        kind = node["type"]
        if kind in ("record", "error"):
            return self._record(node)
        if kind == "array":
            items = self.walk(node["items"])
            return None if items is None else (lambda v: [None if x is None else items(x) for x in v])
        if kind == "map":
            return _map_from_pairs(self.walk(node["values"]))
        if day_time_interval(node):
            return _micros
        if kind in ("bytes", "fixed") and node.get(LOGICAL) == "decimal" and valid_decimal(node, kind):
            return _unscaled_bytes(node["precision"], node.get("scale", 0), node.get("size"))
        return None

    def _record(self, node: Mapping[str, Any]) -> Convert | None:
        name = node["name"]
        built = self.records.get(name)
        if built is not None:
            # built, or being built further up (a recursive field): looked up when called
            return built[0] if built[0] is not None else _later(built)
        cell: list[Convert | None] = [None]
        self.records[name] = cell
        converts = [(f["name"], c) for f in node["fields"] if (c := self.walk(f["type"])) is not None]
        if converts:
            cell[0] = _record_converter(converts)
        return cell[0]

    def _union(self, members: list[Any]) -> Convert | None:
        rest = [m for m in members if base_type(m, self.named) != "null"]
        if len(rest) == 1:
            return self.walk(rest[0])
        if sorted(base_type(m, self.named) for m in rest) in (["int", "long"], ["double", "float"]):
            return None
        return _union_from_members([(i, named_type(m, self.named), self.walk(m)) for i, m in enumerate(rest)])


def _later(cell: list[Convert | None]) -> Convert:
    def convert(value: Any) -> Any:
        fn = cell[0]
        return value if fn is None else fn(value)

    return convert


def _record_converter(converts: list[tuple[str, Convert]]) -> Convert:
    def convert(record: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(record)
        for field_name, fn in converts:
            value = out.get(field_name)
            if value is not None:
                try:
                    out[field_name] = fn(value)
                except _FieldError as exc:
                    raise _FieldError([field_name, *exc.path], exc.reason) from None
                except PayloadError as exc:
                    raise _FieldError([field_name], str(exc)) from None
        return out

    return convert


def _map_from_pairs(values: Convert | None) -> Convert:
    def convert(entries: Any) -> dict[str, Any]:
        pairs = entries.items() if isinstance(entries, Mapping) else entries
        if values is None:
            return dict(pairs)
        return {k: None if v is None else values(v) for k, v in pairs}

    return convert


def _union_from_members(picks: list[tuple[int, str | None, Convert | None]]) -> Convert:
    """{memberN: value, ...} -> the one set member's value, as (name, value) for a named type so fastavro writes
    that very member; all None -> None (the union's null)."""

    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value  # a member's own value, fastavro picks the member
        for i, name, fn in picks:
            member = value.get(f"member{i}")
            if member is not None:
                member = member if fn is None else fn(member)
                return member if name is None else (name, member)
        return None

    return convert


def _unscaled_bytes(precision: int, scale: int, size: int | None) -> Convert:
    """Decimal -> the big-endian two's complement of its unscaled value (`size` bytes for a fixed)."""
    limit = 10 ** precision

    def convert(value: Any) -> bytes:
        if not isinstance(value, (decimal.Decimal, int)):
            raise PayloadError(f"{type(value).__name__} {value!r} is not a decimal")
        scaled = decimal.Decimal(value).scaleb(scale, _DECIMALS)
        unscaled = int(scaled)
        if unscaled != scaled:
            raise PayloadError(f"{value} has more than the {scale} decimal places of decimal({precision}, {scale})")
        if not -limit < unscaled < limit:
            raise PayloadError(f"{value} has more digits than decimal({precision}, {scale}) holds")
        return unscaled.to_bytes(size or (unscaled.bit_length() + 8) // 8, "big", signed=True)

    return convert


_DECIMALS = decimal.Context(prec=80)


def _micros(value: Any) -> Any:
    # Spark's day-time intervals: a long of microseconds, Arrow's duration("us") as timedelta
    if isinstance(value, datetime.timedelta):
        return value // _MICROSECOND
    return value


_MICROSECOND = datetime.timedelta(microseconds=1)
