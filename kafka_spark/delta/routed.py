"""The tables a routing makes of a set of topics: each one a single-table `LoadOptions`, its own sink.

A routed table's options are the routed options with `table` set to the topic's table, the topic as
the only one selected, and the topic's overrides applied; so every part of the single-table sink
(target, format, parsing, publishing, the source's decoding) is built the same way for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_spark.delta.options import LoadOptions
from kafka_spark.delta.routing import PLACEHOLDER, Routing, expand, refuse_shared
from kafka_spark.errors import ConfigError


@dataclass(frozen=True)
class RoutedTable:
    """One topic's table and its single-table options."""

    topic: str
    table: str
    options: LoadOptions

    @property
    def decoded(self) -> bool:
        """Whether the source decodes its values (registry formats): such a table reads its own ranges."""
        return bool(self.options.decoding)


def routing_of(options: LoadOptions) -> Routing:
    if options.routing is None:
        raise ConfigError("these options load one table; routing is not set")
    return options.routing


def selection(options: LoadOptions) -> tuple[list[str], str | None]:
    """The topics (or the pattern) routed options read: as given, else the topics of the tables map."""
    routing = routing_of(options)
    if options.pattern:
        return [], options.pattern
    topics = list(options.topics) or sorted(routing.tables)
    if not topics:
        raise ConfigError("routing: give the topics or a topic pattern to load (a table template alone names none)")
    return topics, None


def routed_tables(options: LoadOptions, topics: Iterable[str]) -> dict[str, RoutedTable]:
    """Every topic's table, keyed by topic; ConfigError when two topics share a table or a dead-letter table."""
    routing = routing_of(options)
    tables = routing.tables_for(topics)
    routed = {topic: RoutedTable(topic, table, table_options(options, routing, topic, table))
              for topic, table in tables.items()}
    dead = {t: r.options.dead_letter for t, r in routed.items() if r.options.dead_letter}
    refuse_shared({t: d for t, d in dead.items() if d}, "dead-letter table")
    return routed


def table_options(options: LoadOptions, routing: Routing, topic: str, table: str) -> LoadOptions:
    """The single-table options of `topic`'s table: the defaults, the topic's overrides, `{topic}` filled in."""
    settings = routing.settings_for(topic)
    given = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
             if getattr(settings, f.name) is not None}
    merged = {**{k: getattr(options, k) for k in given}, **given}
    for name in ("dead_letter", "publish_group"):
        value = merged.get(name, getattr(options, name))
        if isinstance(value, str) and PLACEHOLDER in value:
            merged[name] = expand(value, topic)
    if "format_options" in merged:
        merged["format_options"] = dict(merged["format_options"])
    if "partition_by" in merged:
        merged["partition_by"] = tuple(merged["partition_by"])
    # A table's options are a LoadOptions whatever they came from: the stream's own settings stay with the query.
    base = {f.name: getattr(options, f.name) for f in dataclasses.fields(LoadOptions)}
    return LoadOptions(**{**base, **merged, "table": table, "routing": None, "topics": [topic], "pattern": None})
