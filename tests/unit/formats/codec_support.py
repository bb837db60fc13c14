"""Helpers of the Protobuf and JSON Schema codec tests: message classes compiled from .proto text with protoc
(independently of the codec's own schema compiler), Confluent's in-memory registry as a SchemaSource, framing."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError as ConfluentRegistryError
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from harness.protos import descriptor_set

from kafka_spark.errors import SchemaRegistryError
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.registry.wire import split

TOPIC = "orders"
VALUE = SerializationContext(TOPIC, MessageField.VALUE)


def compile_protos(files: dict[str, str]) -> descriptor_pool.DescriptorPool:
    """A fresh pool holding `files` ({import path: .proto text}) and everything they import."""
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(descriptor_set(files)).file:
        pool.Add(file)
    return pool


def message_class(pool: descriptor_pool.DescriptorPool, name: str) -> Any:
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def new_registry() -> Any:
    """Confluent's in-process registry, empty."""
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


def registered(schema: Any, schema_id: int | None = None, subject: str | None = None,
               version: int | None = None) -> RegisteredSchema:
    refs = tuple(SchemaReference(r.name, r.subject, r.version) for r in (schema.references or ()))
    return RegisteredSchema(schema.schema_str, schema.schema_type or "AVRO", refs, schema_id, subject, version)


class ConfluentSource:
    """Confluent's registry client as the codecs' SchemaSource; counts the lookups by id."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.lookups = 0

    def by_id(self, schema_id: int) -> RegisteredSchema:
        self.lookups += 1
        try:
            return registered(self.client.get_schema(schema_id), schema_id)
        except ConfluentRegistryError as exc:
            raise SchemaRegistryError(str(exc), status=404, error_code=40403) from exc

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        found = self.client.get_version(reference.subject, reference.version)
        return registered(found.schema, found.schema_id, found.subject, found.version)

    def latest(self, subject: str) -> RegisteredSchema:
        found = self.client.get_latest_version(subject)
        return registered(found.schema, found.schema_id, found.subject, found.version)

    def register(self, subject: str, schema: RegisteredSchema) -> RegisteredSchema:
        """Register schema text (and references) as a Java client would, .proto source included."""
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry import SchemaReference as ConfluentReference

        refs = [ConfluentReference(r.name, r.subject, r.version) for r in schema.references]
        schema_id = self.client.register_schema(subject, Schema(schema.schema, schema.schema_type, refs))
        return self.by_id(schema_id)


def serializer(client: Any, cls: Any) -> ProtobufSerializer:
    return ProtobufSerializer(cls, client, {"use.deprecated.format": False})


def deserializer(client: Any, cls: Any) -> ProtobufDeserializer:
    return ProtobufDeserializer(cls, {"use.deprecated.format": False}, schema_registry_client=client)


def unframe(data: bytes) -> tuple[int, tuple[int, ...], bytes]:
    schema_id, indexes, payload = split(data, protobuf=True)
    return schema_id, indexes, bytes(payload)
