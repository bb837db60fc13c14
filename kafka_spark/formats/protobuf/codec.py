"""Protobuf payloads to Arrow values with the types and values of Spark's `from_protobuf`, and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from google.protobuf import message_factory, unknown_fields  # type: ignore[import-untyped]
from google.protobuf.descriptor import Descriptor, FileDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError, Message  # type: ignore[import-untyped]

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.cache import BoundedCache, WriterCache
from kafka_spark.formats.model import RegisteredSchema, SchemaSource, find_writer
from kafka_spark.formats.protobuf.encode import MessageWriter
from kafka_spark.formats.protobuf.schema import find_message, load_schema, message_at, message_indexes
from kafka_spark.formats.protobuf.values import ProtobufOptions, StructPlan, message_plan, protobuf_options

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
        # (schema id, message indexes) -> "" when the writer's message is the reader's, else why not
        self._writers: BoundedCache[tuple[int, tuple[int, ...]], str] = BoundedCache()
        self._files = WriterCache(self._writer_file)

    @property
    def message_name(self) -> str:
        """The reader message's full name."""
        return self._descriptor.full_name

    @property
    def descriptor(self) -> Descriptor:
        """The reader message's descriptor."""
        return self._descriptor

    @property
    def options(self) -> ProtobufOptions:
        """Spark's `from_protobuf` options the decoder applies."""
        return self._options

    def writer_error(self, schema_id: int, indexes: tuple[int, ...]) -> str:
        """Why payloads framed with `schema_id` and `indexes` cannot be read, empty when they can (their writer's
        message is the reader's); SchemaRegistryError when the registry cannot be asked."""
        key = (schema_id, indexes)
        error = self._writers.get(key)
        return self._check_writer(key) if error is None else error

    def decode(self, schema_id: int, indexes: tuple[int, ...], payload: bytes) -> Any:
        """One payload as a dict of the reader message's fields (None in PERMISSIVE mode when it does
        not parse)."""
        error = self.writer_error(schema_id, indexes)
        if error:
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

    def _check_writer(self, key: tuple[int, tuple[int, ...]]) -> str:
        """The reason the writer's message at `key` cannot be read, empty when it is the reader's."""
        schema_id, indexes = key
        try:
            written = message_at(self._files(schema_id), indexes).full_name
        except PayloadError as exc:
            error = str(exc)
        except IndexError:
            error = f"message indexes {list(indexes)} name no message in schema id {schema_id}"
        else:
            error = "" if written == self.message_name else (
                f"schema id {schema_id} wrote message {written}, the reader reads {self.message_name}")
        return self._writers.put(key, error)

    def _writer_file(self, schema_id: int) -> FileDescriptor:
        """The writer schema's file; PayloadError (kept, so a bad id asks the registry once) when there is none."""
        writer = find_writer(self._source, schema_id)
        if writer is None:
            raise PayloadError(f"schema id {schema_id} is not in the registry")
        if writer.schema_type != "PROTOBUF":
            raise PayloadError(f"schema id {schema_id} is {writer.schema_type}, not PROTOBUF")
        try:
            return load_schema(writer, self._source)
        except ConfigError as exc:
            raise PayloadError(f"writer schema id {schema_id}: {exc}") from None


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
