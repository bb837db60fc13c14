"""The tables a routing makes of a set of topics: each one a single-table `LoadOptions`, its own sink.

A routed table's options are the routed options with `table` set to the topic's table, the topic as
the only one selected, and the topic's overrides applied; so every part of the single-table sink
(target, format, parsing, publishing, the source's decoding) is built the same way for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_spark.errors import ConfigError
from kafka_spark.sink.errors import UnroutedRecordError
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.routing import (
    DEFAULT_SPLIT,
    PLACEHOLDER,
    SPLIT_PLACEHOLDER,
    Route,
    Routing,
    expand,
    refuse_shared,
)


@dataclass(frozen=True)
class RoutedTable:
    """A table, the topics it holds and its single-table options; `route` says which of the topic's records
    it takes. A routed table holds one topic; a table loaded without a routing (a routing of one) holds every
    topic its options select."""

    topics: tuple[str, ...]
    table: str
    options: LoadOptions
    route: Route | None = None

    @property
    def topic(self) -> str:
        """The topic of a routed table (several topics' names, comma-separated, for a routing of one)."""
        return ",".join(self.topics)

    @property
    def decoded(self) -> bool:
        """Whether the source decodes its values (registry formats): such a table reads its own ranges."""
        return bool(self.options.decoding)


def routing_of(options: LoadOptions) -> Routing:
    if options.routing is None:
        raise ConfigError("these options load one table; routing is not set")
    return options.routing


def carries_on(options: LoadOptions) -> bool:
    """Whether a failing table lets the others go on (`on_table_error="continue"`); never for one table."""
    return options.routing is not None and options.routing.continues


def selection(options: LoadOptions) -> tuple[list[str], str | None]:
    """The topics (or the pattern) the options read: as given, else (routed) the topics of the tables map."""
    if options.pattern:
        return [], options.pattern
    if options.routing is None:
        if not options.topics:
            raise ConfigError("no topics to load")
        return list(options.topics), None
    topics = list(options.topics) or sorted(options.routing.tables)
    if not topics:
        raise ConfigError("routing: give the topics or a topic pattern to load (a table template alone names none)")
    return topics, None


def routed_tables(options: LoadOptions, topics: Iterable[str]) -> list[RoutedTable]:
    """Every table of the topics (several for a split topic), by table; ConfigError when two topics share a
    table or a dead-letter table. Options without a routing are a routing of one: their table, all the topics."""
    if options.routing is None:
        return [RoutedTable(tuple(sorted(set(topics))), options.target.table, options)]
    routing = options.routing
    routed = [RoutedTable((r.topic,), r.table, table_options(options, routing, r.topic, r.table, r), r)
              for r in routing.routes_for(topics)]
    refuse_shared({r.route.label: r.options.dead_letter for r in routed if r.route and r.options.dead_letter},
                  "dead-letter table")
    return sorted(routed, key=lambda r: r.table)


def table_options(options: LoadOptions, routing: Routing, topic: str, table: str,
                  route: Route | None = None) -> LoadOptions:
    """The single-table options of `topic`'s table: the defaults, the topic's overrides, `{topic}` (and a
    split table's `{split}`) filled in."""
    settings = routing.settings_for(topic)
    given = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
             if getattr(settings, f.name) is not None}
    merged = {**{k: getattr(options, k) for k in given}, **given}
    for name in ("dead_letter", "publish_group"):
        value = merged.get(name, getattr(options, name))
        if isinstance(value, str) and PLACEHOLDER in value:
            value = merged[name] = expand(value, topic)
        if isinstance(value, str) and SPLIT_PLACEHOLDER in value:
            merged[name] = value.replace(SPLIT_PLACEHOLDER, split_name(route))
    if "format_options" in merged:
        merged["format_options"] = dict(merged["format_options"])
    for name in ("partition_by", "sort_by", "key_columns"):
        if name in merged:
            merged[name] = tuple(merged[name])
    # A table's options are a LoadOptions whatever they came from: the stream's own settings stay with the query.
    base = {f.name: getattr(options, f.name) for f in dataclasses.fields(LoadOptions)}
    return LoadOptions(**{**base, **merged, "table": table, "routing": None, "topics": [topic], "pattern": None})


def split_name(route: Route | None) -> str:
    """What `{split}` stands for in a table's settings: the split value, `default` for a split's default
    table, nothing for a topic that is not split."""
    if route is None or route.split is None:
        return ""
    return DEFAULT_SPLIT if route.value is None else route.value


def selected_rows(df, routed: RoutedTable):
    """The rows of `df` (the topic's) that go to the routed table: all, or those its split value selects.
    UnroutedRecordError names the first record no table of a split without a default takes."""
    route = routed.route
    if route is None or route.split is None:
        return df
    from pyspark.sql import functions as F

    split = route.split
    if split.default is None:
        stray = (df.where(F.expr(split.selects_sql(None)))
                 .select("partition", "offset", F.expr(split.value_sql()).alias("value"))
                 .orderBy("partition", "offset").limit(1).collect())
        if stray:
            first = stray[0]
            raise UnroutedRecordError(
                f"topic {route.topic!r} [{first['partition']}] offset {first['offset']}: split value "
                f"{first['value']!r} ({split.by}) names none of the tables ({', '.join(sorted(split.tables))}) and "
                f"the split has no default table; nothing of this batch was committed to table {routed.table}. "
                "Add the value to the split's tables or give a default table.",
                route.topic, first["partition"], first["offset"], first["value"])
    return df.where(F.expr(split.selects_sql(route.value)))


def routed_table_names(options: LoadOptions) -> list[str]:
    """The tables a routing makes of the topics it selects on the brokers now (a pattern's included)."""
    from kafka_spark.client.cluster import Cluster
    from kafka_spark.offsets.resolve import resolve_partitions

    with Cluster(options.kafka) as cluster:
        topics, pattern = selection(options)
        tps = resolve_partitions(cluster, subscribe=topics, pattern=pattern)
    return sorted({r.table for r in routed_tables(options, {tp.topic for tp in tps})})
