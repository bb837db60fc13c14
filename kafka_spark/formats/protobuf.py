"""Protobuf payloads to Arrow values with the types and values of Spark's `from_protobuf`, and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from google.protobuf import message_factory, unknown_fields  # type: ignore[import-untyped]
from google.protobuf.descriptor import Descriptor, FileDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError, Message  # type: ignore[import-untyped]

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.model import RegisteredSchema, SchemaSource, find_writer
from kafka_spark.formats.protobuf_encode import MessageWriter
from kafka_spark.formats.protobuf_schema import find_message, load_schema, message_at, message_indexes
from kafka_spark.formats.protobuf_values import ProtobufOptions, StructPlan, message_plan, protobuf_options

_MAX_CACHED = 4096

__all__ = ["ProtobufDecoder", "ProtobufEncoder", "ProtobufOptions", "protobuf_decoder", "protobuf_encoder",
           "protobuf_options"]


class ProtobufDecoder:
    """Decodes payloads written with any registered Protobuf schema into the reader message's values."""

    def __init__(self, reader: RegisteredSchema, source: SchemaSource, options: ProtobufOptions,
                 message_name: str | None) -> None:
        self._source = source
        self._options = options
        self._descriptor = find_message(load_schema(reader, source), message_name)
        self._class = message_factory.GetMessageClass(self._descriptor)
        plan: StructPlan = message_plan(self._descriptor, options)
        self.arrow_type: pa.DataType = plan.arrow_type
        self._convert = plan.convert
        self._numbers = frozenset(f.number for f in self._descriptor.fields)
        # (schema id, message indexes) -> None when the writer's message is the reader's, else why not
        self._writers: dict[tuple[int, tuple[int, ...]], str | None] = {}
        self._files: dict[int, FileDescriptor | str] = {}

    @property
    def message_name(self) -> str:
        """The reader message's full name."""
        return self._descriptor.full_name

    def decode(self, schema_id: int, indexes: tuple[int, ...], payload: bytes) -> Any:
        """One payload as a dict of the reader message's fields (None in PERMISSIVE mode when it does
        not parse)."""
        key = (schema_id, indexes)
        error = self._writers[key] if key in self._writers else self._check_writer(key)
        if error is not None:
            raise PayloadError(error)
        try:
            message = self._class.FromString(payload)
        except DecodeError as exc:
            return self._malformed(f"Protobuf payload does not parse as {self.message_name}: {exc}")
        mismatched = self._mismatched_field(message)
        if mismatched is not None:
            return self._malformed(mismatched)
        return self._convert(message)

    def _malformed(self, reason: str) -> None:
        if self._options.mode == "PERMISSIVE":
            return None
        raise PayloadError(reason)

    def _mismatched_field(self, message: Message) -> str | None:
        # A field that arrives with another wire type than the reader's lands among the unknown fields
        # under a known number: the writer's field has another type (Spark fails such a record too).
        for field in unknown_fields.UnknownFieldSet(message):
            if field.field_number in self._numbers:
                name = self._descriptor.fields_by_number[field.field_number].name
                return (f"Protobuf field {self.message_name}.{name} (number {field.field_number}) was written "
                        f"with wire type {field.wire_type}, which its type in the reader schema does not have")
        return None

    def _check_writer(self, key: tuple[int, tuple[int, ...]]) -> str | None:
        """None when the writer's message at `key` is the reader's, else the reason it cannot be read."""
        schema_id, indexes = key
        file = self._files.get(schema_id)
        if file is None:
            file = self._files[schema_id] = self._writer_file(schema_id)
        if isinstance(file, str):
            error: str | None = file
        else:
            try:
                written = message_at(file, indexes).full_name
            except IndexError:
                error = f"message indexes {list(indexes)} name no message in schema id {schema_id}"
            else:
                error = None if written == self.message_name else (
                    f"schema id {schema_id} wrote message {written}, the reader reads {self.message_name}")
        if len(self._writers) >= _MAX_CACHED:  # bad records can name endless ids and indexes
            self._writers.clear()
        self._writers[key] = error
        return error

    def _writer_file(self, schema_id: int) -> FileDescriptor | str:
        """The writer schema's file, or why there is none (kept, so a bad id asks the registry once)."""
        if len(self._files) >= _MAX_CACHED:
            self._files.clear()
        writer = find_writer(self._source, schema_id)
        if writer is None:
            return f"schema id {schema_id} is not in the registry"
        if writer.schema_type != "PROTOBUF":
            return f"schema id {schema_id} is {writer.schema_type}, not PROTOBUF"
        try:
            return load_schema(writer, self._source)
        except ConfigError as exc:
            return f"writer schema id {schema_id}: {exc}"


class ProtobufEncoder:
    """Encodes values of the message's column type as payloads of one registered schema."""

    def __init__(self, writer: RegisteredSchema, source: SchemaSource, message_name: str | None) -> None:
        self.schema = writer
        descriptor: Descriptor = find_message(load_schema(writer, source), message_name)
        self.indexes = message_indexes(descriptor)
        self._writer = MessageWriter(descriptor)

    def encode(self, value: Any) -> tuple[tuple[int, ...], bytes]:
        """(message indexes, payload) of one value; PayloadError naming the field that does not fit."""
        return self.indexes, self._writer.serialize(value)


def protobuf_decoder(reader: RegisteredSchema, source: SchemaSource, options: Mapping[str, str] | None = None,
                     message_name: str | None = None) -> ProtobufDecoder:
    """A decoder into `message_name` (a full name; the schema's first message when None) of the reader
    schema, with Spark's `from_protobuf` options; ConfigError for an unknown option or a bad schema."""
    return ProtobufDecoder(reader, source, protobuf_options(options), message_name)


def protobuf_encoder(writer: RegisteredSchema, source: SchemaSource,
                     message_name: str | None = None) -> ProtobufEncoder:
    """An encoder of `message_name` (the schema's first message when None) of the writer schema."""
    return ProtobufEncoder(writer, source, message_name)
