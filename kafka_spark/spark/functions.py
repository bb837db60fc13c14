"""Column functions that read and write Avro, Protobuf and JSON Schema payloads in a column of any DataFrame, with
the signatures and options of Databricks' `from_avro` / `to_avro` / `from_protobuf` / `to_protobuf`.

With a schema registry (a subject and its address) they read and write Confluent's wire format: a value is read
with its writer's schema (by the id in its framing) into the subject's latest schema, and written with a
registered schema. With a schema given inline they read and write plain payloads, as Spark's own functions do.

Each is a vectorised Python UDF: its result type is resolved on the driver when the function is called (asking
the registry then), and tasks decode or encode with the codecs of `format("pykafka")`, cached per process.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_spark.errors import ConfigError
from kafka_spark.formats.encoding import (
    InlineSource,
    resolved,
    with_derived,
    writer_choice,
)
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.options import PayloadOptions, SideFormat
from kafka_spark.formats.plan import SidePlan
from kafka_spark.formats.registry.settings import RegistrySettings, registry_settings

if TYPE_CHECKING:
    from pyspark.sql.column import Column

from kafka_spark.spark.function_tasks import ColumnDecoding, ColumnEncoding, ColumnOrName

__all__ = ["from_avro", "from_json_schema", "from_protobuf", "to_avro", "to_json_schema", "to_protobuf"]

# Databricks' registry options, and Confluent's client settings under Databricks' `confluent.` prefix
_SUBJECT = "schema.registry.subject"
_ADDRESS = "schema.registry.address"
_PROTOBUF_NAME = "schema.registry.protobuf.name"
_CONFLUENT = "confluent."
_REGISTRY = "schema.registry."
_URL = "schema.registry.url"
_MODES = ("FAILFAST", "PERMISSIVE")
_SERIALIZER = ("auto.register.schemas", "use.latest.version", "normalize.schemas")
_AVRO_READ = ("recursivefieldmaxdepth", "enablestableidentifiersforuniontype", "stableidentifierprefixforuniontype")
_PROTOBUF_READ = ("recursive.fields.max.depth", "convert.any.fields.to.json", "emit.default.values", "enums.as.ints",
                  "upcast.unsigned.ints", "unwrap.primitive.wrapper.types", "retain.empty.message.types")


# ---- the functions ---------------------------------------------------------------------------------

def from_avro(data: ColumnOrName, jsonFormatSchema: str | None = None, options: Mapping[str, str] | None = None,
              subject: str | None = None, schemaRegistryAddress: str | None = None) -> Column:
    """Decode Avro binary into a column of Spark's type for the schema (spark-avro's mapping).

    With `subject` and `schemaRegistryAddress`: each value is Confluent-framed, read with its writer's
    registered schema into the subject's latest schema (or `jsonFormatSchema` / option `avroSchema`, when given,
    as the reader schema). Otherwise `jsonFormatSchema` is the schema of plain Avro binary, as Spark's
    `from_avro` reads it.

    Options: `mode` FAILFAST (default: a value that does not decode fails the query with the reason) or
    PERMISSIVE (null instead); `recursiveFieldMaxDepth`, `enableStableIdentifiersForUnionType`,
    `stableIdentifierPrefixForUnionType` as in Spark; the registry's connection settings as
    `confluent.schema.registry.*` (Databricks) or `schema.registry.*` (Confluent's client names: e.g.
    `basic.auth.credentials.source`, `basic.auth.user.info`, `bearer.auth.token`, `ssl.ca.location`).
    """
    given = _Options("from_avro", options, schemaRegistryAddress)
    mode = given.mode()
    reader_text = jsonFormatSchema or given.take("avroSchema")
    evolution = (given.take("avroSchemaEvolutionMode") or "none").strip().lower()
    if evolution != "none":
        raise ConfigError("from_avro: avroSchemaEvolutionMode must be 'none' here: a column function keeps the schema "
                          "it started with (read with format('pykafka') and schemaEvolutionMode=restart to stop on "
                          "a newer schema)")
    rebase = (given.take("datetimeRebaseMode") or "CORRECTED").strip().upper()
    if rebase not in ("CORRECTED", "EXCEPTION"):
        raise ConfigError(f"from_avro: datetimeRebaseMode={rebase} is not supported: dates and timestamps are read "
                          "in the proleptic Gregorian calendar (CORRECTED)")
    codec = given.codec(_AVRO_READ)
    subject = subject or given.subject()
    reader = None if reader_text is None else RegisteredSchema(reader_text, "AVRO")
    decoding = given.decoding("avro", subject, reader, codec, mode)
    return decoding.column(data)


def to_avro(data: ColumnOrName, jsonFormatSchema: str | None = None, subject: ColumnOrName | None = None,
            schemaRegistryAddress: str | None = None, options: Mapping[str, str] | None = None) -> Column:
    """Encode a column as Avro binary.

    With `subject` (a name, or a literal column as Databricks takes it) and `schemaRegistryAddress`: values are
    written Confluent-framed with a schema registered under the subject: `jsonFormatSchema` when given, else the
    schema spark-avro derives from the column's type, which must be registered there already unless option
    `auto.register.schemas` is true; option `use.latest.version=true` writes with the subject's latest schema.
    Otherwise plain Avro binary with `jsonFormatSchema`, or the derived schema, as Spark's `to_avro` writes it.

    Options: `auto.register.schemas` (default false), `use.latest.version` (default false), `normalize.schemas`,
    and the registry's connection settings as for `from_avro`.
    """
    given = _Options("to_avro", options, schemaRegistryAddress)
    schema = None if jsonFormatSchema is None else RegisteredSchema(jsonFormatSchema, "AVRO")
    return given.encoding("avro", _literal(subject, "subject") or given.subject(), schema).column(data)


def from_protobuf(data: ColumnOrName, messageName: str | None = None, descFilePath: str | None = None,
                  options: Mapping[str, str] | None = None, binaryDescriptorSet: bytes | None = None) -> Column:
    """Decode Protobuf binary into a column of Spark's type for the message (Spark's `from_protobuf` mapping).

    With options `schema.registry.subject` and `schema.registry.address`: each value is Confluent-framed and read
    with the subject's latest schema (`messageName` or option `schema.registry.protobuf.name` picks a message other
    than the first). Otherwise `messageName` in the descriptor set at `descFilePath` (read on the driver) or in
    `binaryDescriptorSet` (a serialized FileDescriptorSet, as `protoc --descriptor_set_out --include_imports`
    writes it) is the message of plain Protobuf binary.

    Options: `mode` (FAILFAST / PERMISSIVE) and Spark's `recursive.fields.max.depth`, `emit.default.values`,
    `enums.as.ints`, `upcast.unsigned.ints`, `unwrap.primitive.wrapper.types`, `convert.any.fields.to.json`,
    `retain.empty.message.types`; the registry's connection settings as for `from_avro`.
    """
    given = _Options("from_protobuf", options, None)
    mode = given.mode()
    name = messageName or given.take(_PROTOBUF_NAME)
    codec = given.codec(_PROTOBUF_READ)
    subject = given.subject()
    if subject is not None or given.registry is not None:
        return given.decoding("protobuf", subject, None, codec, mode, name).column(data)
    schema, source = _descriptor_schema("from_protobuf", name, descFilePath, binaryDescriptorSet)
    return given.inline_decoding("protobuf", schema, source, codec, mode, name).column(data)


def to_protobuf(data: ColumnOrName, messageName: str | None = None, descFilePath: str | None = None,
                options: Mapping[str, str] | None = None, binaryDescriptorSet: bytes | None = None) -> Column:
    """Encode a struct column as Protobuf binary of a message.

    With options `schema.registry.subject` and `schema.registry.address`: Confluent-framed, with the subject's
    latest schema (`messageName` or `schema.registry.protobuf.name` picks a message other than the first).
    Otherwise plain Protobuf binary of `messageName` in `descFilePath` or `binaryDescriptorSet`, as for
    `from_protobuf`. Options: the registry's connection settings.
    """
    given = _Options("to_protobuf", options, None)
    name = messageName or given.take(_PROTOBUF_NAME)
    subject = given.subject()
    if subject is not None or given.registry is not None:
        given.settings.setdefault("use.latest.version", "true")
        return given.encoding("protobuf", subject, None, name).column(data)
    schema, source = _descriptor_schema("to_protobuf", name, descFilePath, binaryDescriptorSet)
    given.finish()
    return ColumnEncoding("to_protobuf", "protobuf", inline=schema, source=source, message_name=name).column(data)


def from_json_schema(data: ColumnOrName, jsonFormatSchema: str | None = None,
                     options: Mapping[str, str] | None = None, subject: str | None = None,
                     schemaRegistryAddress: str | None = None) -> Column:
    """Decode JSON text (binary or string) into a column of the type the JSON Schema maps to (objects with
    properties are structs, `additionalProperties` maps, arrays lists, formats stay strings).

    With `subject` and `schemaRegistryAddress`: each value is Confluent-framed, validated against its writer's
    registered schema and read into the subject's latest schema (or `jsonFormatSchema`). Otherwise
    `jsonFormatSchema` is the schema of plain JSON values. Options: `mode` (FAILFAST / PERMISSIVE), `validate`
    (default true), and the registry's connection settings as for `from_avro`.
    """
    given = _Options("from_json_schema", options, schemaRegistryAddress)
    mode = given.mode()
    codec = given.codec(("validate",))
    reader = None if jsonFormatSchema is None else RegisteredSchema(jsonFormatSchema, "JSON")
    return given.decoding("json-schema", subject or given.subject(), reader, codec, mode).column(data)


def to_json_schema(data: ColumnOrName, jsonFormatSchema: str | None = None, subject: ColumnOrName | None = None,
                   schemaRegistryAddress: str | None = None, options: Mapping[str, str] | None = None) -> Column:
    """Encode a column as JSON text (binary), validated against a JSON Schema: with `subject` and
    `schemaRegistryAddress` Confluent-framed with a registered schema, chosen as `to_avro` chooses it (the
    derived schema maps structs to objects, dates and timestamps to ISO-8601 strings, decimals to numbers and
    binary to base64); otherwise plain JSON. Options as for `to_avro`."""
    given = _Options("to_json_schema", options, schemaRegistryAddress)
    schema = None if jsonFormatSchema is None else RegisteredSchema(jsonFormatSchema, "JSON")
    return given.encoding("json-schema", _literal(subject, "subject") or given.subject(), schema).column(data)


# ---- options ---------------------------------------------------------------------------------------

class _Options:
    """A function's options, taken one by one; `finish` refuses what is left."""

    def __init__(self, function: str, options: Mapping[str, str] | None, address: str | None) -> None:
        self.function = function
        self.rest: dict[str, str] = {}
        registry: dict[str, str] = {}
        for key, value in (options or {}).items():
            name = key.strip().lower()
            if name.startswith(_CONFLUENT + _REGISTRY):
                name = name[len(_CONFLUENT):]
            if name == _ADDRESS:
                name = _URL
            if name.startswith(_REGISTRY) and name not in (_SUBJECT, _PROTOBUF_NAME):
                if "truststore" in name or "keystore" in name:
                    raise ConfigError(f"{function}: option {key!r} (a Java key store) is not supported; give PEM "
                                      "files as schema.registry.ssl.ca.location, schema.registry.ssl.certificate."
                                      "location and schema.registry.ssl.key.location")
                registry[name] = str(value)
            else:
                self.rest[name] = str(value)
        if address:
            if registry.get(_URL, address) != address:
                raise ConfigError(f"{function}: schemaRegistryAddress and option {_ADDRESS} name different registries")
            registry[_URL] = address
        self.registry: RegistrySettings | None = registry_settings(registry)
        self.settings = {name: self.rest.pop(name) for name in _SERIALIZER if name in self.rest}

    def take(self, name: str) -> str | None:
        return self.rest.pop(name.lower(), None)

    def subject(self) -> str | None:
        return self.take(_SUBJECT)

    def mode(self) -> bool:
        """Whether `mode` is PERMISSIVE (FAILFAST by default)."""
        text = (self.take("mode") or "FAILFAST").strip().upper()
        if text not in _MODES:
            raise ConfigError(f"{self.function}: option 'mode' must be FAILFAST or PERMISSIVE, got {text!r}")
        return text == "PERMISSIVE"

    def codec(self, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((n, self.rest.pop(n)) for n in names if n in self.rest))

    def finish(self) -> None:
        if self.rest:
            raise ConfigError(f"{self.function}: unknown option(s) {sorted(self.rest)}")
        if self.settings and not self.function.startswith("to_"):
            raise ConfigError(f"{self.function}: option(s) {sorted(self.settings)} apply to writing")

    def _registry(self, subject: str | None) -> RegistrySettings:
        if self.registry is None or not subject:
            raise ConfigError(f"{self.function}: reading or writing Confluent's wire format needs both a subject and "
                              "the schema registry's address; without them, give the schema inline")
        return self.registry

    def decoding(self, fmt: str, subject: str | None, reader: RegisteredSchema | None,
                 codec: tuple[tuple[str, str], ...], permissive: bool,
                 message_name: str | None = None) -> ColumnDecoding:
        """A registry decoding when a subject or registry is given, else one with the inline `reader`."""
        if subject is None and self.registry is None:
            if reader is None:
                raise ConfigError(f"{self.function}: give the schema inline, or a subject and the schema registry's "
                                  "address")
            return self.inline_decoding(fmt, reader, InlineSource(reader), codec, permissive, message_name)
        settings = self._registry(subject)
        self.finish()
        side = SideFormat("value", fmt, subject=subject, message_name=message_name)
        payloads = PayloadOptions(settings, value=side, permissive=permissive, codec_options=codec)
        if reader is None:
            from kafka_spark.formats.plan import plan_payloads

            plan = plan_payloads(payloads, ())
            assert plan.value is not None
            side_plan = plan.value
        else:
            side_plan = SidePlan(side, reader)
        return ColumnDecoding(self.function, fmt, permissive, plan=side_plan, options=payloads)

    def inline_decoding(self, fmt: str, reader: RegisteredSchema, source: InlineSource,
                        codec: tuple[tuple[str, str], ...], permissive: bool,
                        message_name: str | None = None) -> ColumnDecoding:
        self.finish()
        if fmt == "protobuf" and permissive:
            codec = (*codec, ("mode", "PERMISSIVE"))
        return ColumnDecoding(self.function, fmt, permissive, inline=reader, source=source, codec=codec,
                         message_name=message_name)

    def encoding(self, fmt: str, subject: str | None, schema: RegisteredSchema | None,
                 message_name: str | None = None) -> ColumnEncoding:
        """A registry encoding when a subject or registry is given, else a plain one (with `schema`, or the
        schema derived from the column type in the task)."""
        if subject is None and self.registry is None:
            self.finish()
            return ColumnEncoding(self.function, fmt, inline=schema,
                                  source=None if schema is None else InlineSource(schema))
        settings = self._registry(subject)
        self.settings.setdefault("auto.register.schemas", "false")  # Databricks' to_avro registers nothing
        side = replace(writer_choice(SideFormat("value", fmt, subject=subject, message_name=message_name),
                                     self.settings), label=self.function, write_id=uuid.uuid4().hex)
        self.settings.clear()
        self.finish()
        if schema is not None:
            if side.use_latest:
                raise ConfigError(f"{self.function}: a schema given inline and use.latest.version=true both choose "
                                  "the writer schema; set one")
            side = replace(side, derived=schema)
        if side.derived is not None or side.use_latest or side.format.schema_id or side.format.version:
            # the writer schema does not depend on the column type: resolve it now, so a bad one fails here and
            # every task writes with it
            side = resolved(side, settings, None)
        elif fmt == "protobuf":
            with_derived(side, pa.null())  # refuses: a Protobuf schema is never derived
        return ColumnEncoding(self.function, fmt, side=side, registry=settings)


def _literal(value: ColumnOrName | None, what: str) -> str | None:
    """A string, or the value of a literal column (`lit("orders-value")`, as Databricks' to_avro takes it)."""
    if value is None or isinstance(value, str):
        return value
    expression: Any = getattr(value, "_expr", None)  # Spark Connect
    if type(expression).__name__ == "LiteralExpression":
        return str(expression._value)
    try:
        column: Any = value
        node: Any = column._jc.node()  # classic PySpark: the column's expression tree
        if node.getClass().getSimpleName() == "Literal":
            return str(node.value())
    except Exception:  # not a classic column
        pass
    raise ConfigError(f"{what} must be a string or a literal column, got {value!r}")


def _descriptor_schema(function: str, message_name: str | None, path: str | None,
                       descriptor_set: bytes | None) -> tuple[RegisteredSchema, InlineSource]:
    """The file of a FileDescriptorSet that declares `message_name`, as a schema whose imports are the set's
    other files."""
    from google.protobuf import descriptor_pb2  # type: ignore[import-untyped]
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

    if not message_name:
        raise ConfigError(f"{function}: give messageName with descFilePath or binaryDescriptorSet, or the schema "
                          f"registry options {_SUBJECT} and {_ADDRESS}")
    if (path is None) == (descriptor_set is None):
        raise ConfigError(f"{function}: give one of descFilePath and binaryDescriptorSet (a Java class name as "
                          "messageName is not supported)")
    if path is not None:
        try:
            with open(path, "rb") as f:
                descriptor_set = f.read()
        except OSError as exc:
            raise ConfigError(f"{function}: cannot read descFilePath {path!r}: {exc.strerror or exc}") from None
    assert descriptor_set is not None
    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set).file
    except DecodeError as exc:
        raise ConfigError(f"{function}: the descriptor set is not a serialized FileDescriptorSet: {exc}") from None
    by_name = {f.name: f for f in files}

    def schema(file: Any) -> RegisteredSchema:
        refs = tuple(SchemaReference(dep, dep, 1) for dep in file.dependency if dep in by_name)
        return RegisteredSchema(base64.b64encode(file.SerializeToString()).decode("ascii"), "PROTOBUF", refs)

    for file in files:
        for message in file.message_type:
            full = f"{file.package}.{message.name}" if file.package else message.name
            if message_name.lstrip(".") in (full, message.name) or message_name.startswith(
                    (f"{full}.", f"{message.name}.")):
                referenced = tuple((SchemaReference(n, n, 1), schema(f)) for n, f in by_name.items())
                root = schema(file)
                return root, InlineSource(root, referenced)
    raise ConfigError(f"{function}: the descriptor set declares no message {message_name!r}")
