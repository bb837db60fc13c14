"""A query's schemas, fixed when it starts: each decoded side's subject resolved to one registered schema
(the latest, a pinned version or a pinned id), and the decoders the tasks build from it."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_spark.errors import ConfigError, SchemaRegistryError
from kafka_spark.formats.model import FORMAT_TYPES, NOT_FOUND, PayloadDecoder, RegisteredSchema
from kafka_spark.formats.options import CODEC_OPTIONS_OF, PayloadOptions, SideFormat
from kafka_spark.formats.registry.client import SchemaRegistry, registry_for

if TYPE_CHECKING:
    import pyarrow as pa



@dataclass(frozen=True)
class SidePlan:
    """One side's format and the query's schema for it (with its id, subject and version)."""

    format: SideFormat
    reader: RegisteredSchema

    def describe(self) -> str:
        """`subject 'orders-value' version 3 (id 7)`, for messages."""
        version = f" version {self.reader.version}" if self.reader.version is not None else ""
        return f"subject {self.reader.subject!r}{version} (id {self.reader.id})"


@dataclass(frozen=True)
class PayloadPlan:
    """What every task of a query decodes with; picklable, resolved once on the driver."""

    options: PayloadOptions
    key: SidePlan | None = None
    value: SidePlan | None = None

    @property
    def sides(self) -> tuple[SidePlan, ...]:
        return tuple(s for s in (self.key, self.value) if s is not None)


def plan_payloads(options: PayloadOptions, topics: tuple[str, ...]) -> PayloadPlan:
    """Look up each decoded side's schema in the registry; ConfigError naming the subject when it has none."""
    registry = registry_for(options.registry)
    plans = {side.side: SidePlan(side, _reader(registry, side, topics)) for side in options.sides}
    return PayloadPlan(options, plans.get("key"), plans.get("value"))


def _reader(registry: SchemaRegistry, side: SideFormat, topics: tuple[str, ...]) -> RegisteredSchema:
    subject = side.subject_for(topics)
    try:
        if side.schema_id is not None:
            found = registry.by_id(side.schema_id)
            versions = [v for s, v in registry.subject_versions(side.schema_id) if s == subject]
            schema = RegisteredSchema(found.schema, found.schema_type, found.references, side.schema_id, subject,
                                      max(versions) if versions else None)
        elif side.version is not None:
            schema = registry.version(subject, side.version)
        else:
            schema = registry.latest(subject)
    except SchemaRegistryError as exc:
        if exc.error_code not in NOT_FOUND:
            raise
        pinned = (f" id {side.schema_id}" if side.schema_id is not None
                  else f" version {side.version}" if side.version is not None else "")
        raise ConfigError(
            f"{side.side}Format={side.format}: the schema registry has no subject {subject!r}{pinned} ({exc}). "
            f"Set {side.side}Subject (--{side.side}-subject) to the subject the producers register under, or "
            f"{side.side}SubjectNameStrategy to their strategy.") from None
    expected = FORMAT_TYPES[side.format]
    if schema.schema_type != expected:
        raise ConfigError(f"{side.side}Format={side.format}, but subject {subject!r} holds a "
                          f"{schema.schema_type} schema (id {schema.id})")
    return schema


_decoders: dict[tuple[SidePlan, PayloadOptions], PayloadDecoder] = {}
_lock = threading.Lock()


def decoder_for(plan: SidePlan, options: PayloadOptions) -> PayloadDecoder:
    """The side's decoder, one per process and plan, so a worker's tasks share parsed writer schemas."""
    key = (plan, options)
    with _lock:
        found = _decoders.get(key)
        if found is None:
            found = _decoders[key] = _new_decoder(plan, options)
        return found


def _new_decoder(plan: SidePlan, options: PayloadOptions) -> PayloadDecoder:
    source = registry_for(options.registry)
    fmt = plan.format.format
    codec = {k: v for k, v in options.codec_options if k in CODEC_OPTIONS_OF[fmt]}
    if fmt == "avro":
        from kafka_spark.formats.avro.codec import avro_decoder

        return avro_decoder(plan.reader, source, codec)
    if fmt == "protobuf":
        from kafka_spark.formats.protobuf.codec import protobuf_decoder

        return protobuf_decoder(plan.reader, source, codec, plan.format.message_name)
    from kafka_spark.formats.json_schema.codec import json_schema_decoder

    return json_schema_decoder(plan.reader, source, codec)


def column_type(plan: SidePlan, options: PayloadOptions) -> pa.DataType:
    """The Arrow type of the side's decoded column."""
    return decoder_for(plan, options).arrow_type
