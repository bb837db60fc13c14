"""The applications' routing settings: many topics into one Delta table each.

`table-template` (with `{topic}`) or a `[tables]` map (topic -> table) replaces `table`; the top-level
settings are every table's defaults, and a `[topics.NAME]` section of the config file overrides some of
them for one topic. `on-table-error` says what a failing table does: `fail-fast` stops the run, naming
it; `continue` reports it and goes on with the others. A `[topics.NAME.split]` table (`by`, `tables`,
`default`) splits the topic into several tables. They become a `Routing` of `TableSettings` and `Split`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_spark.app.model import AppConfig, table_location
from kafka_spark.app.payloads import BINARY_FORMATS, decoding_options, parse_evolution, parse_format, registry_options
from kafka_spark.app.values import Parser, parse_bool, parse_names, parse_partitions, parse_text
from kafka_spark.errors import ConfigError
from kafka_spark.sink.routing import ON_TABLE_ERROR, PLACEHOLDER, Routing, Split, TableSettings
from kafka_spark.sink.value_schema import require_schema

TABLES_TABLE = "tables"
TOPICS_TABLE = "topics"
SPLIT_TABLE = "split"
SPLIT_KEYS = ("by", "tables", "default")
# A topic's section key -> (TableSettings-like attribute, parser). The names are the top-level keys'.
TOPIC_KEYS: dict[str, tuple[str, Parser]] = {
    "transform": ("transform", parse_text),
    "partition-by": ("partition_by", parse_partitions),
    "sort-by": ("sort_by", parse_partitions),
    "value-schema": ("value_schema", parse_text),
    "value-format": ("value_format", parse_format),
    "value-subject": ("value_subject", parse_text),
    "key-subject": ("key_subject", parse_text),
    "schema-evolution-mode": ("schema_evolution_mode", parse_evolution),
    "dead-letter": ("dead_letter", parse_text),
    "publish-group": ("publish_group", parse_text),
    "merge-schema": ("merge_schema", parse_bool),
    "key-columns": ("key_columns", parse_names),
}
# The keys of a section that become the table's decoding options (`pykafka`'s names).
_FORMAT_OPTIONS = {"value_subject": "valueSubject", "key_subject": "keySubject",
                   "schema_evolution_mode": "schemaEvolutionMode"}
# A stand-in for `{topic}` that every kind of table name may hold, to place a template as a table is placed.
_MARK = "KAFKASPARKTOPIC0"


def parse_template(value: Any, name: str) -> str:
    """A table template: a path, store URI or catalog name holding `{topic}`."""
    text = parse_text(value, name)
    if PLACEHOLDER not in text:
        raise ConfigError(f"{name}: {text!r} has no {PLACEHOLDER}: every topic would go to the same table "
                          "(such as /lake/bronze/{topic} or bronze.{topic})")
    return text


def parse_on_table_error(value: Any, name: str) -> str:
    text = parse_text(value, name).lower()
    if text not in ON_TABLE_ERROR:
        raise ConfigError(f"{name}: expected fail-fast or continue, got {value!r}")
    return text


def read_tables_map(value: Any, where: str) -> dict[str, str]:
    """The `[tables]` table of a config file: topic -> table."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{TABLES_TABLE}] must be a table of topic = \"table\" entries")
    return {str(topic): parse_text(table, f"{where}: {TABLES_TABLE}.{topic}") for topic, table in value.items()}


def read_topic_sections(value: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """The `[topics.NAME]` sections of a config file: topic -> {attribute: value}; unknown keys name the key."""
    import difflib

    sections: dict[str, dict[str, Any]] = {}
    for topic, section in value.items():
        if not isinstance(section, dict):
            raise ConfigError(f"{where}: [{TOPICS_TABLE}.{topic}] must be a table of the topic's settings "
                              f"({', '.join(TOPIC_KEYS)})")
        settings: dict[str, Any] = {}
        for key, item in section.items():
            norm = str(key).replace("_", "-")
            name = f"{where}: {TOPICS_TABLE}.{topic}.{key}"
            if norm == SPLIT_TABLE:
                settings["split"] = read_split(item, name)
                continue
            if norm not in TOPIC_KEYS:
                close = difflib.get_close_matches(norm, list(TOPIC_KEYS), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else f"; a topic's keys: {', '.join(TOPIC_KEYS)}"
                raise ConfigError(f"{name}: unknown key{hint}")
            attr, parse = TOPIC_KEYS[norm]
            settings[attr] = parse(item, name)
        sections[str(topic)] = settings
    return sections


def read_split(value: Any, name: str) -> Split:
    """A `[topics.NAME.split]` table: `by` (a SQL expression or header:NAME), `tables` (value -> table) and
    an optional `default` table."""
    if not isinstance(value, dict):
        raise ConfigError(f"{name}: must be a table with {', '.join(SPLIT_KEYS)}")
    unknown = sorted(set(value) - set(SPLIT_KEYS))
    if unknown:
        raise ConfigError(f"{name}.{unknown[0]}: unknown key; a split's keys: {', '.join(SPLIT_KEYS)}")
    if "by" not in value or "tables" not in value:
        raise ConfigError(f"{name}: give `by` (a SQL expression over the topic's rows, or header:NAME) and "
                          "`tables` (each value's table)")
    tables = value["tables"]
    if not isinstance(tables, dict):
        raise ConfigError(f"{name}.tables: must be a table of value = \"table\" entries")
    try:
        return Split(by=parse_text(value["by"], f"{name}.by"),
                     tables={str(v): template_location(parse_text(t, f"{name}.tables.{v}")) for v, t in tables.items()},
                     default=template_location(parse_text(value["default"], f"{name}.default"))
                     if "default" in value else None)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def routed(config: AppConfig) -> bool:
    """Whether the run loads many tables: a table template, a map of topics to tables, or a split topic."""
    return bool(config.table_template or config.tables
                or any("split" in s for s in config.topic_settings.values()))


def routed_topics(config: AppConfig) -> list[str]:
    """The topics a routed run names: the topics given; none with a pattern (it selects them); else those of
    the `[topics.NAME]` sections and the `[tables]` map."""
    if config.topics or config.pattern:
        return list(config.topics)
    return sorted(set(config.tables) | set(config.topic_settings))


def template_location(template: str) -> str:
    """A table (or template) as the sink takes it, `{topic}` kept: see model.table_location."""
    return table_location(template.replace(PLACEHOLDER, _MARK)).replace(_MARK, PLACEHOLDER)


def check_routing(config: AppConfig) -> None:
    """The routing settings agree with each other and with the others; every error names the setting."""
    if not routed(config):
        if config.on_table_error is not None:
            raise ConfigError("on-table-error: only with table-template or [tables] (many tables)")
        if config.topic_settings:
            first = next(iter(config.topic_settings))
            raise ConfigError(f"[{TOPICS_TABLE}.{first}]: per-topic settings only with table-template or "
                              f"[{TABLES_TABLE}] (a table per topic)")
        return
    if config.table:
        raise ConfigError("give table (one table for every topic) or table-template / [tables] (a table per "
                          "topic), not both")
    if config.embedded:
        raise ConfigError("table-template and [tables] need a broker (--bootstrap-server): the demo loads one table")
    if config.dead_letter and PLACEHOLDER not in config.dead_letter and not _one_topic(config):
        raise ConfigError(f"dead-letter: a dead-letter table serves one table: give it {PLACEHOLDER} (such as "
                          f"/lake/dead/{PLACEHOLDER}), or set it per topic in [{TOPICS_TABLE}.NAME]")
    for topic, settings in config.topic_settings.items():
        _check_topic(config, topic, settings)


def _one_topic(config: AppConfig) -> bool:
    return not config.pattern and len(routed_topics(config)) == 1


def _check_topic(config: AppConfig, topic: str, settings: Mapping[str, Any]) -> None:
    # A section of a topic the run does not select stays unused: flags may narrow the file's selection.
    where = f"[{TOPICS_TABLE}.{topic}]"
    value_format = settings.get("value_format", config.value_format)
    value_schema = settings.get("value_schema", config.value_schema)
    decodes = value_format not in BINARY_FORMATS or config.key_format not in BINARY_FORMATS
    try:
        require_schema(settings.get("dead_letter", config.dead_letter), value_schema, decodes,
                       config.cdc is not None)
        if any(k in settings for k in ("value_format", *_FORMAT_OPTIONS)):
            decoding_options({"value": value_format, "key": config.key_format},
                             {"value": settings.get("value_subject", config.value_subject),
                              "key": settings.get("key_subject", config.key_subject)},
                             registry_options(config),
                             [("schema-evolution-mode", settings.get("schema_evolution_mode"))],
                             "url in [schema-registry] or --schema-registry-config")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def decodes_anywhere(config: AppConfig) -> bool:
    """Whether some table decodes keys or values through the registry (the defaults' format or a topic's)."""
    formats = [config.value_format, config.key_format,
               *(s.get("value_format") for s in config.topic_settings.values())]
    return any(f not in BINARY_FORMATS for f in formats)


def build_routing(config: AppConfig, transform_of: Any) -> Routing:
    """The run's `Routing`: the template and the map placed as tables are, the topics' overrides as
    `TableSettings` (`transform_of` resolves a transform before Spark starts)."""
    overrides = {topic: topic_table_settings(config, settings, transform_of)
                 for topic, settings in config.topic_settings.items()}
    splits = {topic: settings["split"] for topic, settings in config.topic_settings.items() if "split" in settings}
    return Routing(template=template_location(config.table_template) if config.table_template else None,
                   tables={t: template_location(table) for t, table in config.tables.items()},
                   overrides=overrides, on_table_error=config.on_table_error or "fail-fast", splits=splits)


def topic_table_settings(config: AppConfig, settings: Mapping[str, Any], transform_of: Any) -> TableSettings:
    """One topic's overrides; its decoding options are the defaults' with the topic's over them."""
    fields: dict[str, Any] = {k: v for k, v in settings.items() if k not in _FORMAT_OPTIONS and k != "split"}
    if "transform" in fields:
        fields["transform"] = transform_of(fields["transform"])
    if "dead_letter" in fields:
        fields["dead_letter"] = template_location(fields["dead_letter"])
    if any(k in settings for k in _FORMAT_OPTIONS):
        defaults = {opt: getattr(config, attr) for attr, opt in _FORMAT_OPTIONS.items()}
        topic = {opt: settings[attr] for attr, opt in _FORMAT_OPTIONS.items() if attr in settings}
        fields["format_options"] = {k: v for k, v in {**defaults, **topic}.items() if v is not None}
    return TableSettings(**fields)
