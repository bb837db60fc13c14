"""The applications' settings: a TOML file, then the environment, then the flags over them, merged and
validated once, before Spark or a broker starts. Every error is one line that names the setting."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from kafka_spark.app.flags import command_config, overrides
from kafka_spark.app.model import ENV_PREFIX, AppConfig
from kafka_spark.app.payloads import (
    FORMAT_KEYS,
    REGISTRY_TABLE,
    check_payloads,
    decoded,
    registry_config,
    registry_table,
)
from kafka_spark.app.routing import (
    TABLES_TABLE,
    TOPICS_TABLE,
    check_routing,
    parse_on_table_error,
    parse_template,
    read_tables_map,
    read_topic_sections,
    routed,
    routed_topics,
)
from kafka_spark.app.table_formats import (
    ICEBERG_TABLE,
    TABLE_FORMAT_KEYS,
    check_table_format,
    iceberg_overrides,
    iceberg_table,
)
from kafka_spark.app.values import (
    Parser,
    parse_bool,
    parse_count,
    parse_names,
    parse_partitions,
    parse_property,
    parse_start_flag,
    parse_starting,
    parse_text,
)
from kafka_spark.client import ClientConfig
from kafka_spark.client.auth.login import check_login
from kafka_spark.errors import ConfigError
from kafka_spark.sink.change_capture import change_capture, check_change_options
from kafka_spark.sink.position import check_sink_id
from kafka_spark.sink.value_schema import require_schema


def parse_writer(value: Any, name: str) -> str:
    """The writer: auto, spark or direct (Delta), or pyiceberg (Iceberg; checked against the table format later)."""
    from kafka_spark.delta.writer_choice import WRITERS

    writers = (*WRITERS, "pyiceberg")
    text = parse_text(value, name).lower()
    if text not in writers:
        raise ConfigError(f"{name}: expected {', '.join(writers)}, got {value!r}")
    return text


def parse_cdc(value: Any, name: str) -> str | None:
    """How the topics change the table: debezium, upsert, or none (appended)."""
    from kafka_spark.sink.change_capture import CDC_MODES

    text = parse_text(value, name).lower()
    if text == "none":
        return None
    if text not in CDC_MODES:
        raise ConfigError(f"{name}: expected {', '.join(CDC_MODES)} or none, got {value!r}")
    return text


# Config file key -> (config attribute, parser). A key is a flag too (the newer name may be the flag's first).
COMMON_KEYS: dict[str, tuple[str, Parser]] = {
    "bootstrap-servers": ("bootstrap_servers", parse_text),
    "zookeeper": ("zookeeper", parse_text),
    "topics": ("topics", parse_names),
    "pattern": ("pattern", parse_text),
    "table": ("table", parse_text),
    "sink-id": ("sink_id", parse_text),
    "starting-offsets": ("starting_offsets", parse_starting),
    "partition-by": ("partition_by", parse_partitions),
    "sort-by": ("sort_by", parse_partitions),
    "transform": ("transform", parse_text),
    "fail-on-data-loss": ("fail_on_data_loss", parse_bool),
    "include-headers": ("include_headers", parse_bool),
    "publish-group": ("publish_group", parse_text),
    "start-zookeeper-group": ("start_zookeeper_group", parse_text),
    "publish-zookeeper-group": ("publish_zookeeper_group", parse_text),
    "value-schema": ("value_schema", parse_text),
    "dead-letter": ("dead_letter", parse_text),
    "seed-records": ("seed_records", parse_count),
    "merge-schema": ("merge_schema", parse_bool),
    "cdc": ("cdc", parse_cdc),
    "key-columns": ("key_columns", parse_names),
    "cdc-metadata": ("cdc_metadata", parse_bool),
    "cdc-soft-delete": ("cdc_soft_delete", parse_bool),
    "cdc-history": ("cdc_history", parse_text),
    "writer": ("writer", parse_writer),
    **FORMAT_KEYS,
    "table-template": ("table_template", parse_template),
    "on-table-error": ("on_table_error", parse_on_table_error),
    **TABLE_FORMAT_KEYS,
}

# Key -> (attribute of the parsed flags, the flag users see). The flags' names follow the command-line
# vocabulary; the keys keep the names the files have always used.
FLAG_OF_KEY: dict[str, tuple[str, str]] = {
    "bootstrap-servers": ("bootstrap_server", "--bootstrap-server"),
    "topics": ("topic", "--topic"),
    "publish-group": ("group", "--group"),
}


def config_path(name: str) -> Path:
    """The --config file as given, else the file of that name in ./conf (where a checkout keeps its examples)."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    in_conf = Path("conf") / name
    if not path.is_absolute() and in_conf.is_file():
        return in_conf
    raise ConfigError(f"--config: no such file: {name}")


def read_config_file(name: str, config: AppConfig, keys: Mapping[str, tuple[str, Parser]]) -> AppConfig:
    """Parse a TOML config file into `config`; unknown keys and wrong types are errors that name the key."""
    path = config_path(name)
    for key, value in _read_toml(path).items():
        norm = key.replace("_", "-")
        if norm == "kafka":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [kafka] must be a table of client properties")
            config.kafka = {str(k): parse_property(v, f"{path}: kafka.{k}") for k, v in value.items()}
            continue
        if norm == REGISTRY_TABLE and isinstance(value, dict):
            # `schema-registry` is the registry's URL, or a table of all its settings.
            config.registry = registry_table(value, str(path))
            continue
        if norm == ICEBERG_TABLE:
            config.iceberg = iceberg_table(value, str(path))
            continue
        if norm == TABLES_TABLE:
            config.tables = read_tables_map(value, str(path))
            continue
        if norm == TOPICS_TABLE and isinstance(value, dict):
            # `topics` is the list of topics, or (TOML holds one of the two) the [topics.NAME] sections.
            config.topic_settings = read_topic_sections(value, str(path))
            continue
        if norm not in keys:
            close = difflib.get_close_matches(norm, [*keys, "kafka", ICEBERG_TABLE], n=1, cutoff=0.6)
            hint = (f"; did you mean {close[0]!r}?" if close
                    else f"; known keys: {', '.join(keys)}, [kafka], [{REGISTRY_TABLE}], [{ICEBERG_TABLE}], "
                         f"[{TABLES_TABLE}], [{TOPICS_TABLE}.NAME]")
            raise ConfigError(f"{path}: unknown key {key!r}{hint}")
        attr, parse = keys[norm]
        setattr(config, attr, parse(value, f"{path}: {key}"))
    return config


def _read_toml(path: Path) -> dict[str, Any]:
    # A version check rather than a failed import, so that type checkers see tomllib only where it exists;
    # on Python 3.10 everything but --config works.
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            return tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    raise ConfigError("--config needs Python 3.11 or later (tomllib)")


def read_environment(config: AppConfig, keys: Mapping[str, tuple[str, Parser]],
                     environ: Mapping[str, str]) -> None:
    """KAFKA_SPARK_<KEY> variables over the file (only the keys' own: other KAFKA_SPARK_* names are not ours)."""
    for key, (attr, parse) in keys.items():
        name = ENV_PREFIX + key.upper().replace("-", "_")
        if environ.get(name):
            _select(config, key)
            setattr(config, attr, parse(environ[name], name))


def _select(config: AppConfig, key: str) -> None:
    # A topic selection replaces the one below it, whichever kind that was.
    if key == "topics":
        config.pattern = None
    elif key == "pattern":
        config.topics = []


Config = TypeVar("Config", bound="AppConfig")


def merge_settings(args: argparse.Namespace, config: Config, keys: Mapping[str, tuple[str, Parser]],
                   environ: Mapping[str, str] | None = None) -> Config:
    """The run's settings: the --config file, the environment over it, the flags over both."""
    if args.config:
        read_config_file(args.config, config, keys)
    read_environment(config, keys, os.environ if environ is None else environ)
    for key, (attr, parse) in keys.items():
        dest, flag = FLAG_OF_KEY.get(key, (key.replace("-", "_"), f"--{key}"))
        value = getattr(args, dest, None)
        if value is None or value == []:
            continue
        _select(config, key)
        setattr(config, attr, parse(value, flag))
    # --offset is the vocabulary's name of the key starting-offsets, stricter about bare numbers.
    if getattr(args, "offset", None) is not None:
        config.starting_offsets = parse_start_flag(args.offset, "--offset")
    config.kafka.update(command_config(getattr(args, "command_config", None)))
    config.kafka.update(overrides(getattr(args, "overrides", None) or []))
    config.registry.update(registry_config(getattr(args, "schema_registry_config", None)))
    config.iceberg.update(iceberg_overrides(getattr(args, "iceberg_properties", None) or []))
    return config


def client_properties(config: AppConfig) -> dict[str, str]:
    props = dict(config.kafka)
    if config.bootstrap_servers:
        props["bootstrap.servers"] = config.bootstrap_servers
    if config.zookeeper:
        props["zookeeper.connect"] = config.zookeeper
    return props


def validate(config: AppConfig) -> None:
    """Fail before Spark or a broker starts on anything that can be checked offline."""
    if config.topics and config.pattern:
        raise ConfigError("give topics or a pattern, not both")
    check_routing(config)
    if not config.embedded:
        if not config.topics and not config.pattern and not (routed(config) and routed_topics(config)):
            raise ConfigError("give --topic or --pattern (which topics to load)")
        if not config.table and not routed(config):
            raise ConfigError("give --table (the table to load into), or --table-template (a table per "
                              "topic, with {topic})")
    if config.pattern:
        try:
            re.compile(config.pattern)
        except re.error as exc:
            raise ConfigError(f"pattern {config.pattern!r} is not a regular expression: {exc}") from None
    check_sink_id(config.sink_id)
    check_table_format(config)
    capture = change_capture(config.cdc, config.key_columns, config.cdc_metadata, config.cdc_soft_delete,
                             config.cdc_history)
    require_schema(config.dead_letter, config.value_schema, decoded(config), capture is not None)
    check_payloads(config)
    check_change_options(capture, transform=config.transform)
    # The client settings are checked now; the embedded broker's address is not known yet, so stand one in.
    props = client_properties(config)
    if "bootstrap.servers" not in props and "zookeeper.connect" not in props:
        props["bootstrap.servers"] = "localhost:9092"
    client = ClientConfig(props)
    if client.uses_sasl:
        check_login(client)
    if (config.start_zookeeper_group or config.publish_zookeeper_group) and "zookeeper.connect" not in props:
        raise ConfigError("--start-zookeeper-group and --publish-zookeeper-group need --zookeeper (the ZooKeeper "
                          "that holds the group's offsets)")
