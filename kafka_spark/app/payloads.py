"""The applications' payload-format settings: the keys that decode keys and values through a schema registry,
the registry's own settings (a `[schema-registry]` table, a properties file), their checks before Spark
starts, and the sink fields they become.

Registry settings are Confluent's client names (`basic.auth.user.info`, `ssl.ca.location`, ...), with the
`schema.registry.` prefix optional; they are kept under their full names. Their values may be secrets, so
they are never part of an error message or a printed setting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_spark.app.model import AppConfig
from kafka_spark.app.values import Parser, parse_property, parse_text
from kafka_spark.client.config import load_properties
from kafka_spark.errors import ConfigError
from kafka_spark.formats.options import BINARY, FORMATS, payload_options
from kafka_spark.formats.registry.settings import PREFIX

EVOLUTION_MODES = ("none", "restart", "addnewcolumns")
REGISTRY_TABLE = "schema-registry"
REGISTRY_CONFIG_FLAG = "--schema-registry-config"
_URL = PREFIX + "url"
BINARY_FORMATS = (None, BINARY)  # the formats that keep the bytes as they are


def parse_format(value: Any, name: str) -> str:
    """A payload format: binary (the bytes as they are), avro, protobuf or json-schema."""
    text = parse_text(value, name).lower()
    if text not in FORMATS:
        raise ConfigError(f"{name}: expected one of {', '.join(FORMATS)}, got {value!r}")
    return text


def parse_evolution(value: Any, name: str) -> str:
    """What a run does when a record was written with a newer schema than the one it decodes with."""
    text = parse_text(value, name).lower()
    if text not in EVOLUTION_MODES:
        raise ConfigError(f"{name}: expected none, restart or addNewColumns, got {value!r}")
    return text


def parse_registry_url(value: Any, name: str) -> str:
    """The registry's URL(s), comma-separated; checked with the other registry settings. The text may carry
    `user:password@`, so an error never repeats it."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name}: expected the schema registry's URL (http:// or https://, comma-separated)")
    return value.strip()


# Config file key -> (config attribute, parser); each is a flag of the same name and a KAFKA_SPARK_* variable.
FORMAT_KEYS: dict[str, tuple[str, Parser]] = {
    "value-format": ("value_format", parse_format),
    "key-format": ("key_format", parse_format),
    REGISTRY_TABLE: ("schema_registry", parse_registry_url),
    "value-subject": ("value_subject", parse_text),
    "key-subject": ("key_subject", parse_text),
    "schema-evolution-mode": ("schema_evolution_mode", parse_evolution),
}


def registry_name(name: str) -> str:
    """A registry setting's full name: `schema.registry.` in front unless it is there."""
    name = name.strip()
    return name if name.lower().startswith(PREFIX) else PREFIX + name


def registry_table(value: Any, where: str) -> dict[str, str]:
    """The `[schema-registry]` table of a config file as full setting names and their text."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{REGISTRY_TABLE}] must be a table of schema registry settings "
                          f"(url, basic.auth.user.info, ...), or {REGISTRY_TABLE} the registry's URL")
    out: dict[str, str] = {}
    for key, item in value.items():
        name = registry_name(str(key))
        if isinstance(item, bool | int | float | str):
            out[name] = parse_property(item, name)
        else:
            # The value is not shown: it may be a secret.
            raise ConfigError(f"{where}: {REGISTRY_TABLE}.{key}: expected a string, number or boolean")
    return out


def registry_config(path: str | None) -> dict[str, str]:
    """The registry settings of a --schema-registry-config file (a Java .properties file), full names."""
    if not path:
        return {}
    try:
        props = load_properties(path)
    except OSError as exc:
        raise ConfigError(f"{REGISTRY_CONFIG_FLAG}: cannot read {path}: {exc.strerror}") from None
    return {registry_name(k): v for k, v in props.items()}


def with_url(registry: Mapping[str, str], url: str | None) -> dict[str, str]:
    """Registry settings with `url` (when given) as their `schema.registry.url`."""
    if not url:
        return dict(registry)
    return {**{k: v for k, v in registry.items() if k.lower() != _URL}, _URL: url}


def registry_options(config: AppConfig) -> dict[str, str]:
    """Every registry setting of the run, the URL of `schema-registry` (key, variable or flag) over the
    table's and the file's."""
    return with_url(config.registry, config.schema_registry)


def decoded(config: AppConfig) -> bool:
    """Whether the run decodes keys or values (a format other than binary)."""
    return any(f not in BINARY_FORMATS for f in (config.value_format, config.key_format))


def decoding_settings(config: AppConfig) -> dict[str, Any]:
    """The `LoadOptions` fields that decode keys and values: the formats, the registry, and the subjects and
    evolution mode as `pykafka` options."""
    if not decoded(config):
        return {"value_format": config.value_format, "key_format": config.key_format}
    extra = {"valueSubject": config.value_subject, "keySubject": config.key_subject,
             "schemaEvolutionMode": config.schema_evolution_mode}
    return {"value_format": config.value_format, "key_format": config.key_format,
            "schema_registry": registry_options(config),
            "format_options": {k: v for k, v in extra.items() if v is not None}}


def decoding_options(formats: Mapping[str, str | None], subjects: Mapping[str, str | None],
                     registry: Mapping[str, str], others: Sequence[tuple[str, Any]],
                     url_hint: str) -> dict[str, str] | None:
    """The `pykafka` options that decode the sides `formats` names (side -> format), with their `subjects`
    and the `registry` settings; None when no side decodes. ConfigError in the flags' words for settings
    that need a format (`others`: (flag, value) pairs), a subject without its side's format, or no URL
    (`url_hint` says where else a URL may be given)."""
    decoding = {side: fmt for side, fmt in formats.items() if fmt not in (None, BINARY)}
    if not decoding:
        stray = [flag for flag, given in [*((f"--{s}-subject", v) for s, v in subjects.items()), *others] if given]
        if stray:
            raise ConfigError(f"{stray[0]}: only with --value-format or --key-format (avro, protobuf or json-schema)")
        return None
    for side, subject in subjects.items():
        if side not in decoding and subject:
            raise ConfigError(f"--{side}-subject needs --{side}-format (avro, protobuf or json-schema)")
    if not any(k.lower() == _URL for k in registry):
        side, fmt = next(iter(decoding.items()))
        raise ConfigError(f"--{side}-format {fmt} needs --schema-registry (the URL of the schema registry that holds "
                          f"the schemas), or {url_hint}")
    options = {f"{side}Format": fmt for side, fmt in decoding.items()}
    options.update({f"{side}Subject": subject for side, subject in subjects.items() if subject})
    return {**options, **registry}


def check_payloads(config: AppConfig) -> None:
    """The format settings agree with each other and the topics, and the registry's settings parse; every
    error names the setting, never a value."""
    if not decoded(config) and any(s.get("value_format") not in BINARY_FORMATS for s in config.topic_settings.values()):
        return  # only some topics' tables decode: routing.py checks their settings, the registry's included
    options = decoding_options(
        {"value": config.value_format, "key": config.key_format},
        {"value": config.value_subject, "key": config.key_subject}, registry_options(config),
        [("--schema-registry", config.schema_registry),
         (f"[{REGISTRY_TABLE}] or {REGISTRY_CONFIG_FLAG}", config.registry),
         ("--schema-evolution-mode", config.schema_evolution_mode)],
        f"url in [{REGISTRY_TABLE}] or {REGISTRY_CONFIG_FLAG}")
    if options is None:
        return
    for side, fmt in (("value", config.value_format), ("key", config.key_format)):
        if fmt in BINARY_FORMATS or getattr(config, f"{side}_subject"):
            continue
        if config.table_template or config.tables:
            continue  # a table per topic: each decodes with its own topic's subject
        if config.pattern or len(config.topics) > 1:
            what = f"pattern {config.pattern!r}" if config.pattern else f"topics {', '.join(config.topics)}"
            raise ConfigError(
                f"--{side}-format {fmt} reads {what}, but decodes with one schema: the subject is named after the "
                f"topic ('<topic>-{side}'), so give --{side}-subject, or load one topic per run")
    if config.schema_evolution_mode:
        options["schemaEvolutionMode"] = config.schema_evolution_mode
    payload_options(options)
