"""Every option and client property as the code declares it, names and defaults, for the generated reference.

The reference pages (docs/reference/) are built from these functions and a test compares them with the
documented meanings, so an option added here without its documentation (or documented but gone) fails the
suite. Defaults are what the parsers give a read or write that sets nothing: the parsers are where they are
declared, so they are asked rather than repeated.
"""

from __future__ import annotations

from typing import Any

from kafka_spark.client import properties as client_properties_table
from kafka_spark.formats import options as payload_options
from kafka_spark.formats.avro import types as avro_types
from kafka_spark.formats.json_schema import codec as json_schema
from kafka_spark.formats.protobuf import values as protobuf_values
from kafka_spark.formats.registry import settings as registry
from kafka_spark.spark.log import options as log_options
from kafka_spark.spark.sink import options as write_options
from kafka_spark.spark.source import options
from kafka_spark.zookeeper import settings as zookeeper_settings

# The fewest options a read or a write accepts: what every default below is measured against.
_MINIMAL_READ = {"kafka.bootstrap.servers": "broker:9092", "subscribe": "topic"}
_MINIMAL_WRITE = {"kafka.bootstrap.servers": "broker:9092"}
# The fewest settings a decoding read takes.
_MINIMAL_REGISTRY = {"schema.registry.url": "http://registry:8081"}
_MINIMAL_DECODING = {**_MINIMAL_REGISTRY, "valueFormat": "avro", "keyFormat": "avro"}


def source_options() -> tuple[str, ...]:
    """The `pykafka` source's own option names in the order the parser declares them, spelled as in messages
    (`kafka.*` are client properties)."""
    return tuple(options._SOURCE_OPTIONS.values())


def source_defaults() -> dict[str, str]:
    """The default of each source option that has a value by default, as the parser fills it in."""
    batch = options.parse_source_options(_MINIMAL_READ, "batch")
    stream = options.parse_source_options(_MINIMAL_READ, "stream")
    return {
        "startingOffsets": f"{batch.starting.kind} (batch), {stream.starting.kind} (stream)",
        "endingOffsets": batch.ending.kind,
        "startingOffsetsByTimestampStrategy": batch.no_match_strategy,
        "failOnDataLoss": _text(batch.fail_on_data_loss),
        "includeHeaders": _text(batch.include_headers),
        "maxTriggerDelay": str(batch.max_trigger_delay_ms),  # a bare number is milliseconds
        "commitOffsetsToKafka": _text(batch.commit_offsets_to_kafka),
        **_decoding_defaults(),
    }


def _decoding_defaults() -> dict[str, str]:
    """The defaults of the options that decode keys and values, and of the codecs' own options."""
    decoding = payload_options.payload_options(_MINIMAL_DECODING)
    assert decoding is not None and decoding.key is not None and decoding.value is not None
    evolution = "restart" if decoding.restart_on_new_schema else "none"
    out = {"mode": "PERMISSIVE" if decoding.permissive else "FAILFAST", "schemaEvolutionMode": evolution,
           "avroSchemaEvolutionMode": evolution}
    for side in (decoding.key, decoding.value):
        out[f"{side.side}Format"] = payload_options.BINARY
        out[f"{side.side}SubjectNameStrategy"] = side.strategy
        out[f"{side.side}SchemaVersion"] = "latest" if side.version is None else str(side.version)
    avro = avro_types.AvroOptions()
    codecs = {**protobuf_values.OPTION_DEFAULTS, **json_schema.OPTION_DEFAULTS,
              "recursiveFieldMaxDepth": str(avro.recursive_field_max_depth),
              "enableStableIdentifiersForUnionType": str(avro.stable_union_ids).lower(),
              "stableIdentifierPrefixForUnionType": avro.stable_union_prefix}
    out.update({name: codecs[name] for name in payload_options.CODEC_OPTIONS if name in codecs})
    return out


def log_source_options() -> tuple[str, ...]:
    """The options `pykafka-log` takes besides `pykafka`'s."""
    return tuple(log_options._OWN.values())


def log_source_defaults() -> dict[str, str]:
    """The defaults of `pykafka-log`'s own options."""
    parsed = log_options.parse_log_options({"path": "/kafka-logs", "subscribe": "topic"})
    return {"skipCorruptBatches": _text(parsed.skip_corrupt), "bytesPerTask": str(parsed.task_bytes)}


def sink_options() -> tuple[str, ...]:
    """The `pykafka` sink's option names, lower-cased as its parser declares them (matched case-insensitively)."""
    return (*sorted(write_options._SINK_OPTIONS), *write_options.WRITE_PAYLOAD_OPTIONS)


def sink_defaults() -> dict[str, str]:
    """The defaults of the sink's own options, and the producer properties a write sets unless given."""
    plain = write_options.parse_sink_options(_MINIMAL_WRITE)
    exactly = write_options.parse_sink_options({**_MINIMAL_WRITE, "exactlyOnce": "true"})
    return {
        "exactlyonce": _text(plain.exactly_once),
        "kafka.enable.idempotence": plain.kafka["enable.idempotence"],
        "kafka.transaction.timeout.ms": exactly.kafka["transaction.timeout.ms"],
    }


def client_properties() -> dict[str, Any]:
    """Every client property (`kafka.*` options without the prefix) and its default (None: none)."""
    return {name: prop.default for name, prop in client_properties_table.PROPERTIES.items()}


def ignored_client_properties() -> tuple[str, ...]:
    """Java client properties that are accepted so that property files work unchanged, and have no effect."""
    return tuple(sorted(client_properties_table.IGNORED_KEYS))


def secret_client_properties() -> frozenset[str]:
    """The properties whose values never appear in logs, errors or plans."""
    return client_properties_table.SECRET_KEYS


def zookeeper_properties() -> dict[str, Any]:
    """The `zookeeper.*` properties of ZooKeeper-mode clusters and their defaults (None: none)."""
    parsed = zookeeper_settings.ZooKeeperSettings.from_properties({zookeeper_settings.CONNECT: "zk:2181"})
    assert parsed is not None  # a connect string was given
    defaults: dict[str, Any] = {name: None for name in zookeeper_settings.KEYS}
    defaults[zookeeper_settings.SESSION_TIMEOUT] = parsed.session_timeout_ms
    defaults[zookeeper_settings.CONNECTION_TIMEOUT] = parsed.connection_timeout_ms
    return defaults


def registry_settings() -> dict[str, Any]:
    """The `schema.registry.*` settings and their defaults (None: none), as the parser fills them in."""
    parsed = registry.registry_settings(_MINIMAL_REGISTRY)
    assert parsed is not None  # a URL was given
    defaults: dict[str, Any] = dict.fromkeys(registry.OPTIONS)
    given = {
        "ssl.endpoint.identification.algorithm": "https" if parsed.check_hostname else "",
        "request.timeout.ms": parsed.timeout_ms,
        "max.retries": parsed.max_retries,
        "retry.backoff.ms": parsed.retry_backoff_ms,
        "retry.backoff.max.ms": parsed.retry_backoff_max_ms,
    }
    for name, value in given.items():
        assert registry.PREFIX + name in defaults, name
        defaults[registry.PREFIX + name] = value
    return defaults


def secret_registry_settings() -> frozenset[str]:
    """The registry settings whose values never appear in logs, errors or plans (the URL may carry a
    password)."""
    return frozenset(registry.SECRET_OPTIONS)


def _text(value: bool) -> str:
    return str(value).lower()
