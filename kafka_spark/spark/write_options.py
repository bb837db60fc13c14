"""Sink options and column checks of a `pykafka` write, with the rules and messages of Spark's Kafka sink
(no pyspark here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError

HEADERS_TYPE = "array<struct<key:string,value:binary>>"

_UNSUPPORTED_KAFKA = {
    "key.serializer": "Kafka option 'key.serializer' is not supported as keys are serialized with "
                      "ByteArraySerializer.",
    "value.serializer": "Kafka option 'value.serializer' is not supported as value are serialized with "
                        "ByteArraySerializer.",
}
_SINK_OPTIONS = {"topic", "path"}


@dataclass(frozen=True)
class SinkOptions:
    """Validated options of a `pykafka` write: producer properties (`kafka.*` without the prefix) and the
    topic that overrides the `topic` column."""

    kafka: dict[str, str]
    topic: str | None = None

    def client_config(self) -> ClientConfig:
        """The producer's configuration."""
        return ClientConfig(self.kafka)


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check the options of a write and give them as `SinkOptions`; unknown names raise `ConfigError`."""
    kafka = {k[len("kafka."):]: v for k, v in options.items() if k.lower().startswith("kafka.")}
    for name in options:
        lowered = name.lower()
        if not lowered.startswith("kafka.") and lowered not in _SINK_OPTIONS:
            raise ConfigError(f"unknown option {name!r} for a pykafka write; known: topic, and kafka.* for the "
                              "Kafka producer.")
    for key in kafka:
        if key.lower() in _UNSUPPORTED_KAFKA:
            raise ConfigError(_UNSUPPORTED_KAFKA[key.lower()])
    if "bootstrap.servers" not in kafka and "zookeeper.connect" not in kafka:
        raise ConfigError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    # The Java producer's default since Kafka 3.0: idempotent, unless acks was lowered and idempotence
    # was not asked for (then it is off rather than a configuration error).
    if "enable.idempotence" not in kafka and str(kafka.get("acks", "all")).strip().lower() in ("all", "-1"):
        kafka["enable.idempotence"] = "true"
    topic = next((v for k, v in options.items() if k.lower() == "topic"), None)
    sink = SinkOptions(kafka, topic.strip() if topic is not None else None)
    sink.client_config()  # bad producer properties fail at planning, naming the property
    return sink


def check_columns(columns: Mapping[str, str], topic: str | None) -> None:
    """Spark's sink contract for the input columns (name -> Spark catalog type string): a string `topic`
    unless the option names one, a string or binary `value`, and optional `key`, `headers`, `partition`."""
    if topic is None:
        if "topic" not in columns:
            raise ConfigError("topic option required when no 'topic' attribute is present. Use the topic option "
                              "for setting a topic.")
        _check_type(columns, "topic", ("string",))
    _check_type(columns, "key", ("string", "binary"))
    if "value" not in columns:
        raise ConfigError("Required attribute 'value' not found")
    _check_type(columns, "value", ("string", "binary"))
    _check_type(columns, "headers", (HEADERS_TYPE,))
    _check_type(columns, "partition", ("int",))


def _check_type(columns: Mapping[str, str], name: str, accepted: tuple[str, ...]) -> None:
    found = columns.get(name)
    if found is not None and found not in accepted:
        raise ConfigError(f"{name} attribute unsupported type {found}. {name} must be a(n) {' or '.join(accepted)}")
