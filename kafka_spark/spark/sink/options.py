"""Sink options and column checks of a `pykafka` write, with the rules and messages of Spark's Kafka sink
(no pyspark here), and the options that serialise keys and values with registered schemas."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError
from kafka_spark.formats.encoding import WritePayloads, writer_choice
from kafka_spark.formats.options import OPTION_NAMES as PAYLOAD_OPTIONS
from kafka_spark.formats.options import REGISTRY_PREFIX, payload_options
from kafka_spark.spark.redaction import redacted_repr

if TYPE_CHECKING:
    from kafka_spark.client.cluster import Cluster

HEADERS_TYPE = "array<struct<key:string,value:binary>>"

_UNSUPPORTED_KAFKA = {
    "key.serializer": "Kafka option 'key.serializer' is not supported as keys are serialized with "
                      "ByteArraySerializer.",
    "value.serializer": "Kafka option 'value.serializer' is not supported as value are serialized with "
                        "ByteArraySerializer.",
}
# checkpointLocation reaches a stream sink's options with the rest
_SINK_OPTIONS = {"topic", "path", "checkpointlocation", "exactlyonce", "transactionalidprefix"}
# keyFormat / valueFormat and the rest of a side's options (the read's `mode` and codec options do not apply)
_SIDE_OPTIONS = {n.lower(): n for n in PAYLOAD_OPTIONS if n.startswith(("key", "value"))}
# Confluent's serializer settings, under their own names
SERIALIZER_SETTINGS = ("auto.register.schemas", "use.latest.version", "normalize.schemas")
# The options that serialise keys and values, as users spell them (besides schema.registry.*)
WRITE_PAYLOAD_OPTIONS = (*_SIDE_OPTIONS.values(), *SERIALIZER_SETTINGS)
# A task's transaction stays open until the driver commits the whole job or micro-batch: the broker's cap
# (transaction.max.timeout.ms, 15 minutes by default) rather than the Java producer's one minute.
EXACTLY_ONCE_TIMEOUT_MS = "900000"
# Much of a write's cost is per batch (the broker's work, and ours), so the sink's batches go up to just under a
# MiB: below the broker's default max.message.bytes (1048588). The producer splits a batch a topic with a lower
# limit refuses, as Java's does (client/producer/batch_split.py).
SINK_BATCH_SIZE = "1000000"
# And per request: at Java's max.request.size (1 MiB) each request carried a single such batch, where Java's own
# carries 64 of its 16 KiB ones. 16 MiB lets one request carry every partition's batch (the broker takes requests
# up to its socket.request.max.bytes, 100 MiB). Measured standalone, 1 KB records into 8 partitions: the
# producer's CPU 1.02-1.07 -> 0.89-0.92 s a GB, the broker's 2.6-2.9 -> 2.1-2.2.
SINK_MAX_REQUEST_SIZE = "16777216"
# And they wait for records up to 100 ms rather than Java's 5: a task's records reach the table when it ends (its
# flush sends what is left), so lingering costs a sink no latency, while at 5 ms the batches of a small-record
# write go out an eighth full, each encoded by the sender's thread away from the records' cache (measured at 100 B:
# a third more batches and a fifth more worker CPU).
SINK_LINGER_MS = "100"


@dataclass(frozen=True)
class SinkOptions:
    """Validated options of a `pykafka` write: producer properties (`kafka.*` without the prefix) and the
    topic that overrides the `topic` column."""

    kafka: dict[str, str]
    topic: str | None = None
    exactly_once: bool = False
    transactional_id_prefix: str | None = None
    # keyFormat / valueFormat: the sides serialised with registered schemas
    payloads: WritePayloads | None = None

    __repr__ = redacted_repr  # `kafka` holds client passwords

    def client_config(self) -> ClientConfig:
        """The producer's configuration."""
        return ClientConfig(self.kafka)

    def pooled_cluster(self) -> AbstractContextManager[Cluster]:
        """The worker's pooled connections and metadata for these producer properties (a task's producer runs on
        them; the next task with the same properties takes them over)."""
        from kafka_spark.client.pool import pooled_cluster
        from kafka_spark.client.producer.producer import producer_properties

        return pooled_cluster(producer_properties(self.kafka))


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check the options of a write and give them as `SinkOptions`; unknown names raise `ConfigError`."""
    kafka = {k[len("kafka."):]: v for k, v in options.items() if k.lower().startswith("kafka.")}
    for name in options:
        lowered = name.lower()
        if (not lowered.startswith(("kafka.", REGISTRY_PREFIX)) and lowered not in _SINK_OPTIONS
                and lowered not in _SIDE_OPTIONS and lowered not in SERIALIZER_SETTINGS):
            raise ConfigError(f"unknown option {name!r} for a pykafka write; known: topic, exactlyOnce, "
                              "transactionalIdPrefix, keyFormat / valueFormat with their subject and schema options, "
                              f"{', '.join(SERIALIZER_SETTINGS)}, schema.registry.*, and kafka.* for the Kafka "
                              "producer.")
    for key in kafka:
        if key.lower() in _UNSUPPORTED_KAFKA:
            raise ConfigError(_UNSUPPORTED_KAFKA[key.lower()])
    if "bootstrap.servers" not in kafka and "zookeeper.connect" not in kafka:
        raise ConfigError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    # The Java producer's default since Kafka 3.0: idempotent, unless acks was lowered, more than 5 requests in
    # flight or no retries were asked for and idempotence was not (then it is off rather than a configuration error).
    if "enable.idempotence" not in kafka and str(kafka.get("acks", "all")).strip().lower() in ("all", "-1") \
            and _int_property(kafka, "max.in.flight.requests.per.connection", 5) <= 5 \
            and _int_property(kafka, "retries", 1) != 0:
        kafka["enable.idempotence"] = "true"
    kafka.setdefault("batch.size", SINK_BATCH_SIZE)
    kafka.setdefault("linger.ms", SINK_LINGER_MS)
    kafka.setdefault("max.request.size", SINK_MAX_REQUEST_SIZE)
    topic = _option(options, "topic")
    exactly_once, prefix = _exactly_once(options, kafka)
    sink = SinkOptions(kafka, topic.strip() if topic is not None else None, exactly_once, prefix,
                       write_payloads(options))
    sink.client_config()  # bad producer properties fail at planning, naming the property
    return sink


def write_payloads(options: Mapping[str, str]) -> WritePayloads | None:
    """The sides `keyFormat` / `valueFormat` serialise, with their writer-schema choice (no schema derived yet);
    None when both are binary. ConfigError for a bad value, or a setting without a format."""
    sides = {k: v for k, v in options.items()
             if k.lower() in _SIDE_OPTIONS or k.lower().startswith(REGISTRY_PREFIX)}
    settings = {k: v for k, v in options.items() if k.lower() in SERIALIZER_SETTINGS}
    parsed = payload_options(sides)
    if parsed is None:
        if settings:
            raise ConfigError(f"option {sorted(settings)[0]!r} needs valueFormat or keyFormat (avro, protobuf or "
                              "json-schema)")
        return None
    key, value = (None if s is None else writer_choice(s, _side_settings(options, s.side, settings))
                  for s in (parsed.key, parsed.value))
    return WritePayloads(parsed.registry, key, value)


def _side_settings(options: Mapping[str, str], side: str, settings: dict[str, str]) -> dict[str, str]:
    # `valueSchemaVersion=latest` asks for what use.latest.version does
    version = _option(options, f"{side}SchemaVersion")
    if version is not None and version.strip().lower() == "latest":
        return {**{k.lower(): v for k, v in settings.items()}, "use.latest.version": "true"}
    return settings


def _int_property(kafka: Mapping[str, str], name: str, default: int) -> int:
    # Malformed numbers are ClientConfig's to report, naming the property.
    try:
        return int(str(kafka.get(name, default)).strip())
    except ValueError:
        return default


def _option(options: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in options.items() if k.lower() == name.lower()), None)


def _exactly_once(options: Mapping[str, str], kafka: dict[str, str]) -> tuple[bool, str | None]:
    """`exactlyOnce` and `transactionalIdPrefix`, checked against the producer properties they need."""
    text = (_option(options, "exactlyOnce") or "false").strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"exactlyOnce must be true or false, got {text!r}")
    prefix = _option(options, "transactionalIdPrefix")
    if any(k.lower() == "transactional.id" for k in kafka):
        raise ConfigError("kafka.transactional.id cannot be set on a pykafka write: with exactlyOnce=true each "
                          "task derives its own; use transactionalIdPrefix to choose their prefix")
    if text == "false":
        if prefix is not None:
            raise ConfigError("transactionalIdPrefix applies only with exactlyOnce=true")
        return False, None
    if prefix is not None and not prefix.strip():
        raise ConfigError("transactionalIdPrefix must not be empty")
    # parse_sink_options turned idempotence on unless acks was lowered or it was switched off
    if kafka.get("enable.idempotence", "false").strip().lower() != "true":
        raise ConfigError("exactlyOnce=true writes through an idempotent producer: kafka.enable.idempotence must "
                          "not be false (and kafka.acks must be all)")
    kafka.setdefault("transaction.timeout.ms", EXACTLY_ONCE_TIMEOUT_MS)
    return True, None if prefix is None else prefix.strip()


def check_columns(columns: Mapping[str, str], topic: str | None, serialised: Collection[str] = ()) -> None:
    """Spark's sink contract for the input columns (name -> Spark catalog type string): a string `topic`
    unless the option names one, a string or binary `value`, and optional `key`, `headers`, `partition`.
    The `serialised` sides (`key`, `value`) may have any type: a registered schema writes them."""
    if topic is None:
        if "topic" not in columns:
            raise ConfigError("topic option required when no 'topic' attribute is present. Use the topic option "
                              "for setting a topic.")
        _check_type(columns, "topic", ("string",))
    if "key" not in serialised:
        _check_type(columns, "key", ("string", "binary"))
    if "value" not in columns:
        raise ConfigError("Required attribute 'value' not found")
    if "value" not in serialised:
        _check_type(columns, "value", ("string", "binary"))
    _check_type(columns, "headers", (HEADERS_TYPE,))
    _check_type(columns, "partition", ("int",))


def _check_type(columns: Mapping[str, str], name: str, accepted: tuple[str, ...]) -> None:
    found = columns.get(name)
    if found is not None and found not in accepted:
        raise ConfigError(f"{name} attribute unsupported type {found}. {name} must be a(n) {' or '.join(accepted)}")
