"""Subject name strategies: the registry subject a topic's keys or values are registered under."""

from __future__ import annotations

from kafka_spark.errors import ConfigError

STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_JAVA_PACKAGE = "io.confluent.kafka.serializers.subject."
_BY_NAME = {name.lower(): name for name in STRATEGIES} | {(_JAVA_PACKAGE + name).lower(): name for name in STRATEGIES}


def subject_name(strategy: str, topic: str, is_key: bool, record_name: str | None) -> str:
    """The subject under `strategy` (a name of STRATEGIES or its Java class name, any case) for `topic`'s keys
    or values; `record_name` is the full name of the record (Avro) or message (Protobuf, JSON Schema title)."""
    canonical = _BY_NAME.get(strategy.strip().lower())
    if canonical is None:
        raise ConfigError(f"unknown subject name strategy {strategy!r}; expected one of {', '.join(STRATEGIES)} "
                          f"(or its class name {_JAVA_PACKAGE}<name>)")
    if canonical == "TopicNameStrategy":
        return f"{topic}-{'key' if is_key else 'value'}"
    if not record_name:
        raise ConfigError(f"the {canonical} needs the record's full name, and the schema has none")
    if canonical == "RecordNameStrategy":
        return record_name
    return f"{topic}-{record_name}"
