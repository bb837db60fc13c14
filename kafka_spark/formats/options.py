"""The options that turn a read's keys and values from bytes into decoded columns (`valueFormat`, the registry
settings, subjects, pinned versions, `mode`), validated once, without I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_spark.errors import ConfigError
from kafka_spark.formats.model import FORMAT_TYPES
from kafka_spark.formats.registry.settings import RegistrySettings, registry_settings
from kafka_spark.formats.registry.subjects import STRATEGIES, subject_name

BINARY = "binary"
FORMATS = (BINARY, *FORMAT_TYPES)

# Per side (`value...` / `key...`), the camel-case suffix -> what it sets.
_SIDE_SUFFIXES = ("Format", "Subject", "SubjectNameStrategy", "RecordName", "SchemaVersion", "SchemaId",
                  "MessageName")
_MODES = ("FAILFAST", "PERMISSIVE")
_EVOLUTION = ("none", "restart")
# The codecs' own options, passed to the codec of their format as given: Spark's `from_protobuf` options and
# JSON Schema validation.
CODEC_OPTIONS_OF: dict[str, tuple[str, ...]] = {
    "avro": ("recursiveFieldMaxDepth", "enableStableIdentifiersForUnionType", "stableIdentifierPrefixForUnionType"),
    "protobuf": ("emit.default.values", "enums.as.ints", "upcast.unsigned.ints", "unwrap.primitive.wrapper.types",
                 "convert.any.fields.to.json", "retain.empty.message.types", "recursive.fields.max.depth"),
    "json-schema": ("validate",),
}
CODEC_OPTIONS = tuple(name for names in CODEC_OPTIONS_OF.values() for name in names)
# Every option name this module reads (the source's unknown-option check accepts them), as users spell them.
OPTION_NAMES = (*(f"{side}{suffix}" for side in ("value", "key") for suffix in _SIDE_SUFFIXES), "mode",
                "schemaEvolutionMode", "avroSchemaEvolutionMode", *CODEC_OPTIONS)
REGISTRY_PREFIX = "schema.registry."


@dataclass(frozen=True)
class SideFormat:
    """How one side (key or value) is decoded: its format and where its query schema comes from."""

    side: str  # "key" | "value"
    format: str  # avro | protobuf | json-schema
    subject: str | None = None
    strategy: str = "TopicNameStrategy"
    record_name: str | None = None
    version: int | None = None
    schema_id: int | None = None
    message_name: str | None = None

    def subject_for(self, topics: tuple[str, ...]) -> str:
        """The subject whose schema is the query's: given, or named by the strategy from the one topic read."""
        if self.subject:
            return self.subject
        if self.strategy == "RecordNameStrategy":
            return subject_name(self.strategy, "", self.side == "key", self.record_name)
        if len(topics) != 1:
            what = f"topics {', '.join(topics)}" if topics else "a topic pattern"
            raise ConfigError(
                f"{self.side}Format={self.format} reads {what}: the {self.strategy} names one subject per topic, "
                f"and a query decodes with one schema. Set {self.side}Subject, or read one topic per query.")
        return subject_name(self.strategy, topics[0], self.side == "key", self.record_name)


@dataclass(frozen=True)
class PayloadOptions:
    """A read's decoding: the registry, each decoded side, what a bad record does, and the codecs' options."""

    registry: RegistrySettings
    key: SideFormat | None = None
    value: SideFormat | None = None
    permissive: bool = False
    restart_on_new_schema: bool = False
    codec_options: tuple[tuple[str, str], ...] = ()

    @property
    def sides(self) -> tuple[SideFormat, ...]:
        return tuple(s for s in (self.key, self.value) if s is not None)


def payload_options(options: Mapping[str, str]) -> PayloadOptions | None:
    """The decoding `options` ask for (any case), None when neither `keyFormat` nor `valueFormat` decodes;
    ConfigError for a bad value or a decoding option without a format."""
    opts = {k.lower(): v for k, v in options.items() if v is not None}
    sides = {side: _side(opts, side) for side in ("key", "value")}
    registry = registry_settings({k: v for k, v in options.items() if k.lower().startswith(REGISTRY_PREFIX)})
    if sides["key"] is None and sides["value"] is None:
        stray = sorted(name for name in OPTION_NAMES if name.lower() in opts
                       and not name.lower().endswith("format")) + sorted(
            k for k in opts if k.startswith(REGISTRY_PREFIX))
        if stray:
            raise ConfigError(f"option {stray[0]!r} needs valueFormat or keyFormat (avro, protobuf or json-schema)")
        return None
    if registry is None:
        raise ConfigError("valueFormat/keyFormat avro, protobuf and json-schema need 'schema.registry.url': "
                          "the schema registry that holds the schemas")
    mode = opts.get("mode", "FAILFAST").strip().upper()
    if mode not in _MODES:
        raise ConfigError(f"option 'mode' must be FAILFAST or PERMISSIVE, got {opts['mode']!r}")
    evolution = opts.get("schemaevolutionmode", opts.get("avroschemaevolutionmode", "none")).strip().lower()
    if evolution == "addnewcolumns":
        raise ConfigError("schemaEvolutionMode=addNewColumns is the sink's mode (kafka_spark.delta / .iceberg load "
                          "and start_stream, --schema-evolution-mode): a Spark query's schema is fixed when it "
                          "starts. Read with 'restart' to stop on a newer version, or 'none'.")
    if evolution not in _EVOLUTION:
        raise ConfigError(f"option 'schemaEvolutionMode' must be 'none' or 'restart', got {evolution!r}")
    codec = tuple(sorted((name, opts[name.lower()].strip()) for name in CODEC_OPTIONS if name.lower() in opts))
    return PayloadOptions(registry, sides["key"], sides["value"], mode == "PERMISSIVE", evolution == "restart", codec)


def _side(opts: Mapping[str, str], side: str) -> SideFormat | None:
    def get(suffix: str) -> str | None:
        text = opts.get(f"{side}{suffix}".lower())
        return text.strip() if text is not None and text.strip() else None

    fmt = (get("Format") or BINARY).lower()
    if fmt not in FORMATS:
        raise ConfigError(f"option '{side}Format' must be one of {', '.join(FORMATS)}, got {get('Format')!r}")
    if fmt == BINARY:
        return None
    strategy = _strategy(get("SubjectNameStrategy") or "TopicNameStrategy", side)
    if get("MessageName") and fmt != "protobuf":
        raise ConfigError(f"option '{side}MessageName' is for {side}Format=protobuf, not {fmt}")
    if get("SchemaVersion") and get("SchemaId"):
        raise ConfigError(f"options '{side}SchemaVersion' and '{side}SchemaId' both pin the schema; give one")
    version = get("SchemaVersion")
    return SideFormat(side, fmt, get("Subject"), strategy, get("RecordName"),
                      None if version in (None, "latest") else _int(version, f"{side}SchemaVersion"),
                      _int(get("SchemaId"), f"{side}SchemaId"), get("MessageName"))


def _strategy(text: str, side: str) -> str:
    # subject_name validates the name; the canonical short name is kept.
    short = text.rsplit(".", 1)[-1]
    match = next((s for s in STRATEGIES if s.lower() == short.lower()), None)
    if match is None:
        raise ConfigError(f"option '{side}SubjectNameStrategy' must be one of {', '.join(STRATEGIES)}, got {text!r}")
    return match


def _int(text: str | None, option: str) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"option {option!r} must be a positive integer (or 'latest'), got {text!r}") from None
    if value <= 0:
        raise ConfigError(f"option {option!r} must be positive, got {value}")
    return value
