"""Keys and values written with registered schemas: which schema a subject writes with (Confluent's serializer
settings), the schema derived from a column's type, encoders cached per process, and Confluent's framing.

Writer schema, in order: a pinned id (`valueSchemaId`), a pinned version (`valueSchemaVersion`), the subject's
latest (`use.latest.version`), else the schema derived from the column type, registered under the subject
(`auto.register.schemas`, idempotent) or required to be there already. Protobuf has no derived schema.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_spark.errors import ConfigError, PayloadError, SchemaRegistryError
from kafka_spark.formats.model import (
    FORMAT_TYPES,
    NOT_FOUND,
    PayloadEncoder,
    RegisteredSchema,
    SchemaReference,
    SchemaSource,
)
from kafka_spark.formats.options import SideFormat
from kafka_spark.formats.registry.client import SchemaRegistry, registry_for
from kafka_spark.formats.registry.settings import RegistrySettings
from kafka_spark.formats.registry.subjects import subject_name
from kafka_spark.formats.registry.wire import frame

# spark-avro's `to_avro` names the top-level record so when it is given no name.
DEFAULT_RECORD_NAME = "topLevelRecord"
JSON_SCHEMA_DRAFT = "http://json-schema.org/draft-07/schema#"
_INCOMPATIBLE = 409
_INVALID = (42201, 42202)
# Writer schemas resolved per (write, topic) in a process: a long-lived executor serves many writes.
_CACHE_SIZE = 4096


@dataclass(frozen=True)
class WriteSide:
    """How one side (key or value) of a write is serialised: its format and subject (`format`), the writer
    schema choice, and the schema derived from the column type (None for Protobuf, or when not needed).

    `write_id` tells writes apart in the per-process caches, so that a write keeps the writer schema it
    resolved first (the latest version at that moment) while another write resolves its own. `resolved` is the
    writer schema found on the driver, for every topic's rows or (`resolved_topic`) for that topic's.
    """

    format: SideFormat
    auto_register: bool = True
    use_latest: bool = False
    normalize: bool = False
    derived: RegisteredSchema | None = None
    write_id: str = ""
    # what messages call the side, when not `valueFormat=avro` (a column function's name)
    label: str = ""
    resolved: RegisteredSchema | None = None
    resolved_topic: str | None = None

    @property
    def side(self) -> str:
        return self.format.side

    def subject(self, topic: str) -> str:
        """The subject `topic`'s records are written under."""
        fmt = self.format
        if fmt.subject:
            return fmt.subject
        return subject_name(fmt.strategy, topic, fmt.side == "key", fmt.record_name)

    @property
    def per_topic(self) -> bool:
        """Whether the subject depends on each row's topic."""
        return not self.format.subject and self.format.strategy != "RecordNameStrategy"

    def describe(self) -> str:
        """`valueFormat=avro` (or the label) for messages."""
        return self.label or f"{self.side}Format={self.format.format}"


@dataclass(frozen=True)
class WritePayloads:
    """A write's serialised sides and the registry their schemas live in; picklable."""

    registry: RegistrySettings
    key: WriteSide | None = None
    value: WriteSide | None = None

    @property
    def sides(self) -> tuple[WriteSide, ...]:
        return tuple(s for s in (self.key, self.value) if s is not None)


def writer_choice(fmt: SideFormat, settings: Mapping[str, str]) -> WriteSide:
    """The side's writer-schema choice from Confluent's serializer settings `auto.register.schemas` (default
    true), `use.latest.version` and `normalize.schemas` (default false), given in any case; ConfigError when
    they contradict each other or a pinned schema."""
    opts = {k.strip().lower(): v for k, v in settings.items() if v is not None}
    use_latest = _flag(opts, "use.latest.version", False)
    pinned = fmt.schema_id is not None or fmt.version is not None
    explicit = "auto.register.schemas" in opts
    auto_register = _flag(opts, "auto.register.schemas", not (use_latest or pinned))
    if auto_register and explicit and (use_latest or pinned):
        what = "use.latest.version=true" if use_latest else (
            f"{fmt.side}SchemaId" if fmt.schema_id is not None else f"{fmt.side}SchemaVersion")
        raise ConfigError(f"auto.register.schemas=true and {what} both choose the {fmt.side} writer schema; "
                          "set one")
    if use_latest and pinned:
        raise ConfigError(f"use.latest.version=true and a pinned {fmt.side} schema both choose the writer "
                          "schema; set one")
    return WriteSide(fmt, auto_register, use_latest, _flag(opts, "normalize.schemas", False))


def _flag(opts: Mapping[str, str], name: str, default: bool) -> bool:
    text = opts.get(name)
    if text is None:
        return default
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"option {name!r} must be true or false, got {text!r}")
    return value == "true"


def with_derived(side: WriteSide, arrow_type: pa.DataType, write_id: str = "") -> WriteSide:
    """`side` with the schema derived from the column's `arrow_type` when its choice needs one (Avro and JSON
    Schema, neither pinned nor latest); ConfigError for Protobuf then, or a type the format cannot hold."""
    fmt = side.format
    needs = not side.use_latest and fmt.schema_id is None and fmt.version is None
    if not needs:
        return replace(side, derived=None, write_id=write_id)
    if fmt.format == "protobuf":
        raise ConfigError(
            f"{side.describe()}: a Protobuf schema cannot be derived from the {side.side} column's type. Register "
            f"the .proto under the subject first, then set use.latest.version=true (or {side.side}SchemaVersion / "
            f"{side.side}SchemaId) to write with it")
    return replace(side, derived=derived_schema(fmt.format, arrow_type, fmt.record_name), write_id=write_id)


def derived_schema(fmt: str, arrow_type: pa.DataType, record_name: str | None = None) -> RegisteredSchema:
    """The schema of format `fmt` (avro or json-schema) derived from a column of `arrow_type`, as spark-avro's
    `to_avro` derives it; `record_name` (a full name) names the top record (`topLevelRecord` by default)."""
    namespace, _, name = (record_name or DEFAULT_RECORD_NAME).rpartition(".")
    if fmt == "avro":
        from kafka_spark.formats.avro.codec import avro_schema_for

        return RegisteredSchema(avro_schema_for(arrow_type, name, namespace), "AVRO")
    if fmt == "json-schema":
        from kafka_spark.formats.json_schema.types import json_text

        return RegisteredSchema(json_text(json_schema_for(arrow_type, record_name)), "JSON")
    raise ConfigError(f"no schema can be derived for format {fmt!r}")


# ---- the writer schema of a subject ----------------------------------------------------------------

def writer_schema(registry: SchemaRegistry, side: WriteSide, topic: str) -> RegisteredSchema:
    """The registered schema (with its id) that `side` writes `topic`'s records with, chosen as the module
    says; ConfigError naming the subject when the registry has none, refuses the derived schema (incompatible
    or invalid), or holds another format's schema."""
    fmt = side.format
    subject = side.subject(topic)
    try:
        schema = _choose(registry, side, subject)
    except SchemaRegistryError as exc:
        code = exc.error_code if exc.error_code is not None else exc.status
        if code == _INCOMPATIBLE or exc.status == _INCOMPATIBLE:
            raise ConfigError(f"{side.describe()}: the schema registry refuses the schema derived from the "
                              f"{side.side} column under subject {subject!r} as incompatible with the subject's "
                              f"versions: {exc}. Change the column to a compatible type, or set "
                              f"use.latest.version=true to write with the subject's latest schema") from None
        if code in _INVALID:
            raise ConfigError(f"{side.describe()}: the schema registry refuses the {side.side} schema under "
                              f"subject {subject!r} as invalid: {exc}") from None
        if code in NOT_FOUND:
            pinned = (f" id {fmt.schema_id}" if fmt.schema_id is not None
                      else f" version {fmt.version}" if fmt.version is not None else "")
            raise ConfigError(f"{side.describe()}: the schema registry has no subject {subject!r}{pinned} ({exc}). "
                              f"Register the {side.side} schema under it first, or set {side.side}Subject / "
                              f"{side.side}SubjectNameStrategy to where it is") from None
        raise
    expected = FORMAT_TYPES[fmt.format]
    if schema.schema_type != expected:
        raise ConfigError(f"{side.describe()}, but the writer schema for subject {subject!r} (id {schema.id}) is "
                          f"a {schema.schema_type} schema")
    return schema


def _choose(registry: SchemaRegistry, side: WriteSide, subject: str) -> RegisteredSchema:
    fmt = side.format
    if fmt.schema_id is not None:
        found = registry.by_id(fmt.schema_id)
        return RegisteredSchema(found.schema, found.schema_type, found.references, fmt.schema_id, subject)
    if fmt.version is not None:
        return registry.version(subject, fmt.version)
    if side.use_latest:
        return registry.latest(subject)
    derived = side.derived
    if derived is None:  # with_derived refuses this for Protobuf at planning
        raise ConfigError(f"{side.describe()}: no writer schema: set use.latest.version=true, "
                          f"{side.side}SchemaVersion or {side.side}SchemaId")
    if side.auto_register:
        schema_id = registry.register(subject, derived, side.normalize)
        return replace(derived, id=schema_id, subject=subject)
    registered = registry.lookup(subject, derived)
    if registered is None:
        raise ConfigError(
            f"{side.describe()}: the schema derived from the {side.side} column is not registered under subject "
            f"{subject!r} (auto.register.schemas=false). Register it, set auto.register.schemas=true, or set "
            f"use.latest.version=true to write with the subject's latest schema. The derived schema: "
            f"{derived.schema}")
    return registered


# ---- encoders, per process -------------------------------------------------------------------------

@dataclass(frozen=True)
class SubjectWriter:
    """One subject's writer schema and its encoder: values in, framed bytes out."""

    schema: RegisteredSchema
    encoder: PayloadEncoder
    format: str

    def framed(self, value: Any) -> bytes:
        """`value` encoded and framed with the writer schema's id; PayloadError when it does not fit."""
        indexes, payload = encode_value(self.format, self.encoder, value)
        assert self.schema.id is not None
        return frame(self.schema.id, payload, indexes if self.format == "protobuf" else None)

    def describe(self) -> str:
        """`subject 'orders-value' version 3 (id 7)`, for messages."""
        version = f" version {self.schema.version}" if self.schema.version is not None else ""
        return f"subject {self.schema.subject!r}{version} (id {self.schema.id})"


_writers: OrderedDict[tuple[WriteSide, RegistrySettings, str], SubjectWriter] = OrderedDict()
_encoders: dict[tuple[str, RegisteredSchema, object, str | None], PayloadEncoder] = {}
_lock = threading.Lock()


def resolved(side: WriteSide, settings: RegistrySettings, topic: str | None) -> WriteSide:
    """`side` with its writer schema resolved now, when its subject does not depend on each row's topic or every
    row goes to `topic`; unchanged otherwise. ConfigError when the schema cannot be resolved (see writer_schema)."""
    if topic is None and side.per_topic:
        return side
    schema = subject_writer(side, settings, topic or "").schema
    return replace(side, resolved=schema, resolved_topic=topic if side.per_topic else None)


def subject_writer(side: WriteSide, settings: RegistrySettings, topic: str) -> SubjectWriter:
    """The writer for `topic`'s records of `side`, resolved once per process and write."""
    key = (side, settings, topic)
    with _lock:
        found = _writers.get(key)
        if found is not None:
            _writers.move_to_end(key)
            return found
    registry = registry_for(settings)
    if side.resolved is not None and side.resolved_topic in (None, topic):
        schema = side.resolved
    else:
        schema = writer_schema(registry, side, topic)
    writer = SubjectWriter(schema, encoder_for(side.format.format, schema, registry, side.format.message_name),
                           side.format.format)
    with _lock:
        _writers[key] = writer
        if len(_writers) > _CACHE_SIZE:
            _writers.popitem(last=False)
    return writer


def encoder_for(fmt: str, schema: RegisteredSchema, source: SchemaSource,
                message_name: str | None = None) -> PayloadEncoder:
    """The encoder of writer `schema` in format `fmt`, built once per process for a registry (by its settings)
    or an InlineSource; any other source gets a new one."""
    key_source = (source.settings if isinstance(source, SchemaRegistry)
                  else source if isinstance(source, InlineSource) else None)
    if key_source is None:
        return _new_encoder(fmt, schema, source, message_name)
    key = (fmt, schema, key_source, message_name)
    with _lock:
        found = _encoders.get(key)
    if found is not None:
        return found
    encoder = _new_encoder(fmt, schema, source, message_name)
    with _lock:
        return _encoders.setdefault(key, encoder)


def _new_encoder(fmt: str, schema: RegisteredSchema, source: SchemaSource, message_name: str | None) -> PayloadEncoder:
    if fmt == "avro":
        from kafka_spark.formats.avro.codec import avro_encoder

        return avro_encoder(schema, source)
    if fmt == "protobuf":
        from kafka_spark.formats.protobuf.codec import protobuf_encoder

        return protobuf_encoder(schema, source, message_name)
    from kafka_spark.formats.json_schema.codec import json_schema_encoder

    return json_schema_encoder(schema, source)


def encode_value(fmt: str, encoder: PayloadEncoder, value: Any) -> tuple[tuple[int, ...], bytes]:
    """(message indexes, payload) of one column value (as `to_pylist` gives it) in format `fmt`. JSON has no
    dates, timestamps, decimals or bytes: they are written as ISO-8601 text, numbers and base64 text."""
    if fmt == "json-schema":
        value = json_ready(value)
    return encoder.encode(value)


def json_ready(value: Any) -> Any:
    """`value` with the Python types JSON lacks in the forms `json_schema_for` declares for them."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    if isinstance(value, tuple):  # a map entry from to_pylist
        return tuple(json_ready(v) for v in value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return value


def encode_side(side: WriteSide, settings: RegistrySettings, column: pa.Array,
                topics: str | Sequence[str]) -> pa.Array:
    """Each value of `column` framed with the writer schema of its row's topic (`topics`: one for all rows, or one
    per row), as binary; null stays null (a tombstone). Avro is encoded column-wise, the rows of one writer at a
    time (`avro.column_encode`), the rows it leaves per record. PayloadError naming the topic of the first row that
    does not fit, the subject and why."""
    from kafka_spark.formats.avro.column_encode import block_write_on

    if side.format.format != "avro" or not block_write_on():
        return pa.array(_framed(side, settings, column.to_pylist(), topics, range(len(column))), pa.binary())
    from kafka_spark.formats.avro.codec import AvroEncoder
    from kafka_spark.formats.avro.column_encode import encode_column, fill

    writers: dict[str, tuple[SubjectWriter, np.ndarray | None]] = {}  # topic -> writer, its rows (None: all)
    if isinstance(topics, str):
        writers[topics] = (subject_writer(side, settings, topics), None)
    else:
        codes = pa.array(topics, pa.string()).dictionary_encode().indices.to_numpy(zero_copy_only=False)
        present = np.flatnonzero(column.is_valid().to_numpy(zero_copy_only=False))
        by_topic = present[np.argsort(codes[present], kind="stable")]  # each topic's rows together, in order
        bounds = np.searchsorted(codes[by_topic], np.arange(int(codes.max(initial=0)) + 2))
        # each topic's writer in the order the rows meet them, before any row is encoded (so a later topic's schema
        # may be registered before an earlier row fails); when one fails, the per-record path says which error is first
        try:
            for code in sorted(np.unique(codes[present]), key=lambda c: by_topic[bounds[c]]):
                mine = by_topic[bounds[code]:bounds[code + 1]]
                writers[topics[mine[0]]] = (subject_writer(side, settings, topics[mine[0]]), mine)
        except Exception:
            return pa.array(_framed(side, settings, column.to_pylist(), topics, range(len(column))), pa.binary())
    parts: list[pa.Array] = []
    order: list[np.ndarray] = []
    left: list[np.ndarray] = []
    for writer, rows in writers.values():
        part = column if rows is None else column.take(pa.array(rows))
        assert isinstance(writer.encoder, AvroEncoder) and writer.schema.id is not None
        done = encode_column(part, *writer.encoder.parsed_writer(), frame(writer.schema.id, b""))
        if done is None:
            done = pa.nulls(len(part), pa.binary()), np.flatnonzero(part.is_valid().to_numpy(zero_copy_only=False))
        parts.append(done[0])
        order.append(np.arange(len(part)) if rows is None else rows)
        left.append(done[1] if rows is None else rows[done[1]])
    if isinstance(topics, str):
        out = parts[0]
    else:  # every row in place; the rows of no writer are null
        position = np.full(len(column), -1, np.int64)
        everyone = np.concatenate(order) if order else np.zeros(0, np.int64)
        position[everyone] = np.arange(len(everyone))
        out = pa.concat_arrays([*parts, pa.nulls(1, pa.binary())]).take(pa.array(position, mask=position < 0))
    rest = np.sort(np.concatenate(left)) if left else np.zeros(0, np.int64)
    if not len(rest):
        return out
    payloads = _framed(side, settings, column.take(pa.array(rest)).to_pylist(), topics, rest.tolist())
    return fill(out, rest, [p for p in payloads if p is not None])


def _framed(side: WriteSide, settings: RegistrySettings, values: Sequence[Any], topics: str | Sequence[str],
            rows: Iterable[int]) -> list[bytes | None]:
    """Each of `values` (of `rows`) framed per record with its row's writer; the first that does not fit raises."""
    out: list[bytes | None] = []
    single = topics if isinstance(topics, str) else None
    writer: SubjectWriter | None = subject_writer(side, settings, single) if single is not None else None
    current = single
    for row, value in zip(rows, values, strict=True):
        if value is None:
            out.append(None)
            continue
        topic = single if single is not None else topics[row]
        if writer is None or topic != current:
            writer, current = subject_writer(side, settings, topic), topic
        try:
            out.append(writer.framed(value))
        except PayloadError as exc:
            raise PayloadError(f"a row for topic {topic!r}: the {side.side} does not fit the writer schema, "
                               f"{writer.describe()}: {exc}") from None
    return out


# ---- JSON Schema from a column type ----------------------------------------------------------------

def json_schema_for(arrow_type: pa.DataType, title: str | None = None) -> dict[str, Any]:
    """A JSON Schema (draft-07) for values of `arrow_type` as the JSON Schema encoder writes them: structs are
    objects of their fields (non-nullable ones required), maps objects of their values, lists arrays; integers
    `integer`, floats and decimals `number`, dates, timestamps and binary `string` (date, date-time, base64).
    `title` names the top object, as Confluent's serializers use it for the record-name strategies."""
    schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DRAFT}
    if title:
        schema["title"] = title
    schema.update(_json(arrow_type))
    return schema


def _json(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_dictionary(t):
        return _json(t.value_type)
    if pa.types.is_boolean(t):
        return {"type": "boolean"}
    if pa.types.is_integer(t):
        return {"type": "integer"}
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return {"type": "number"}
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return {"type": "string"}
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return {"type": "string", "contentEncoding": "base64"}
    if pa.types.is_date(t):
        return {"type": "string", "format": "date"}
    if pa.types.is_timestamp(t):
        return {"type": "string", "format": "date-time"}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {"type": "array", "items": _nullable(t.value_field)}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise ConfigError(f"JSON objects have string keys; a map with {t.key_type} keys has no JSON Schema form")
        return {"type": "object", "additionalProperties": _nullable(t.item_field)}
    if pa.types.is_struct(t):
        schema: dict[str, Any] = {"type": "object", "properties": {f.name: _nullable(f) for f in t},
                                  "additionalProperties": False}
        required = [f.name for f in t if not f.nullable]
        if required:
            schema["required"] = required
        return schema
    raise ConfigError(f"no JSON Schema type for Arrow type {t}")


def _nullable(field: pa.Field) -> dict[str, Any]:
    schema = _json(field.type)
    if field.nullable and isinstance(schema.get("type"), str):
        schema = {**schema, "type": [schema["type"], "null"]}
    return schema


# ---- an inline schema as a source ------------------------------------------------------------------

@dataclass(frozen=True)
class InlineSource:
    """A SchemaSource without a registry: one schema under every id, and the schemas it references by
    (subject, version). For payloads without Confluent's framing (a schema given inline)."""

    schema: RegisteredSchema
    referenced: tuple[tuple[SchemaReference, RegisteredSchema], ...] = ()

    def by_id(self, schema_id: int) -> RegisteredSchema:
        return self.schema

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        for ref, schema in self.referenced:
            if (ref.subject, ref.version) == (reference.subject, reference.version):
                return schema
        raise ConfigError(f"the inline schema references {reference.name!r}, which was not given")
