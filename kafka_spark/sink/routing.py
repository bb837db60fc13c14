"""Routing many topics into one table each: which table a topic goes to, and with which settings.

A `Routing` names each topic's table by an explicit map (`tables`, which wins) or a template with
`{topic}`. A template that is a path or a store URI (`/lake/bronze/{topic}`, `s3a://lake/bronze/{topic}`)
takes the topic as it is (Kafka's topic characters, `[A-Za-z0-9._-]`, are all valid in paths). A
template that is a catalog name (`bronze.{topic}`) maps every character a table name cannot hold (any
outside `[A-Za-z0-9_]`) to `_`, and backquotes an identifier that then starts with a digit; two topics
whose names map to the same table (compared without case, as catalogs do) are refused, naming both; so are
two paths that differ only in case (`/lake/Orders`, `/lake/orders`: one table on a case-insensitive store),
from a template or the explicit map alike.

A `Split` sends one topic's records to several tables by a value of each record: a SQL expression over
the topic's rows as they are read (Spark's Kafka columns; `value` decoded for a registry format), or
`header:NAME`, the record's last `NAME` header as UTF-8 text. Each value names its table; records whose
value is null or names no table go to `default`, or, without one, fail their tables' commits, naming the
record (nothing is dropped unasked). Each of those tables is a table of its own, with its own position.
`{split}` in a dead-letter table or publish group is replaced by the split value (`default` for the default
table; nothing for a topic that is not split).

The per-table settings default to the options' own (`transform`, `partition_by`, `sort_by`, `value_schema`,
`value_format` + `format_options`, `dead_letter`, `publish_group`, `merge_schema`, a change stream's
`key_columns`); `overrides` replaces
any of them for one topic. `dead_letter` and `publish_group` may hold `{topic}` too; a dead-letter table
serves one table only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.errors import ConfigError
from kafka_spark.sink.table_names import is_table_name

Transform = Callable[[Any], Any]  # DataFrame -> DataFrame

ON_TABLE_ERROR = ("fail-fast", "continue")
PLACEHOLDER = "{topic}"
SPLIT_PLACEHOLDER = "{split}"
HEADER_PREFIX = "header:"
DEFAULT_SPLIT = "default"
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class TableSettings:
    """One topic's table settings; a field left None takes the options' value."""

    transform: str | Transform | None = None
    partition_by: Sequence[str] | None = None
    sort_by: Sequence[str] | None = None  # an Iceberg table's sort order
    value_schema: str | None = None
    value_format: str | None = None
    format_options: Mapping[str, str] | None = None
    dead_letter: str | None = None
    publish_group: str | None = None
    merge_schema: bool | None = None
    key_columns: Sequence[str] | None = None  # a change stream's key, per topic (a database's tables differ)


@dataclass(frozen=True)
class Split:
    """One topic's records into several tables by a value of each record (see the module docstring)."""

    by: str
    tables: Mapping[str, str]
    default: str | None = None

    def __post_init__(self) -> None:
        if not self.by.strip() or (self.header is not None and not self.header):
            raise ConfigError(f"split by {self.by!r}: give a SQL expression over the topic's rows or header:NAME")
        if not self.tables:
            raise ConfigError(f"split by {self.by!r}: give the table of each value")

    @property
    def header(self) -> str | None:
        """The header whose value splits, when `by` names one."""
        text = self.by.strip()
        return text[len(HEADER_PREFIX):].strip() if text.lower().startswith(HEADER_PREFIX) else None

    def value_sql(self) -> str:
        """The SQL expression of a record's split value, as text."""
        header = self.header
        if header is not None:
            # A header may repeat: the last one counts, as Kafka's lastHeader() reads it.
            return (f"CAST(try_element_at(filter(headers, h -> h.key = {sql_text(header)}), -1).value AS STRING)")
        return f"CAST(({self.by}) AS STRING)"

    def selects_sql(self, value: str | None) -> str:
        """The SQL condition of the records that go to `value`'s table (None: the default table's)."""
        if value is not None:
            return f"({self.value_sql()}) <=> {sql_text(value)}"
        return f"NOT coalesce(({self.value_sql()}) IN ({', '.join(sql_text(v) for v in sorted(self.tables))}), false)"


def sql_text(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Route:
    """A table of a topic: all its records, or those a split value selects (`split`, `value`; value None: the
    split's default table)."""

    topic: str
    table: str
    split: Split | None = None
    value: str | None = None

    @property
    def label(self) -> str:
        """The topic, and the split value when there is one."""
        if self.split is None:
            return repr(self.topic)
        return f"{self.topic!r} ({self.split.by} = {self.value!r})" if self.value is not None else \
            f"{self.topic!r} ({self.split.by}: {DEFAULT_SPLIT})"


@dataclass(frozen=True)
class Routing:
    """Which table each topic goes to, per-topic setting overrides, and what a failing table does.

    `on_table_error`: `fail-fast` stops the load or stream at the first table whose commit fails, once
    the batch's other commits (which run side by side) have finished: the tables they committed stay
    committed; `continue` reports the failure by table and goes on with the others, retrying the failed
    table at the next run or micro-batch.
    """

    template: str | None = None
    tables: Mapping[str, str] = field(default_factory=dict)
    overrides: Mapping[str, TableSettings] = field(default_factory=dict)
    on_table_error: str = "fail-fast"
    splits: Mapping[str, Split] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.template is None and not self.tables and not self.splits:
            raise ConfigError("routing needs a table template with {topic} (such as /lake/bronze/{topic} or "
                              "bronze.{topic}) or a map of topics to tables")
        if self.template is not None and PLACEHOLDER not in self.template:
            raise ConfigError(f"table template {self.template!r} has no {PLACEHOLDER}: every topic would go to "
                              "the same table")
        if self.on_table_error not in ON_TABLE_ERROR:
            raise ConfigError(f"on_table_error {self.on_table_error!r}: expected 'fail-fast' or 'continue'")

    @property
    def continues(self) -> bool:
        """Whether a failing table lets the others go on."""
        return self.on_table_error == "continue"

    def table_for(self, topic: str) -> str:
        """The table of `topic`: the explicit map's, else the template's; ConfigError when neither has one."""
        if topic in self.tables:
            return self.tables[topic]
        if self.template is None:
            raise ConfigError(f"topic {topic!r} is selected but routed to no table: add it to the tables map "
                              "or give a table template")
        return expand(self.template, topic)

    def tables_for(self, topics: Iterable[str]) -> dict[str, str]:
        """The table of every topic (not split); ConfigError naming both topics when two share a table."""
        routed = {topic: self.table_for(topic) for topic in sorted(set(topics))}
        refuse_shared({repr(t): table for t, table in routed.items()}, "table")
        return routed

    def routes_for(self, topics: Iterable[str]) -> list[Route]:
        """Every table of the topics: one per topic, several for a split topic; ConfigError naming both when
        two share a table."""
        routes: list[Route] = []
        for topic in sorted(set(topics)):
            split = self.splits.get(topic)
            if split is None:
                routes.append(Route(topic, self.table_for(topic)))
                continue
            routes.extend(Route(topic, expand(table, topic), split, value)
                          for value, table in sorted(split.tables.items()))
            if split.default is not None:
                routes.append(Route(topic, expand(split.default, topic), split))
        refuse_shared({r.label: r.table for r in routes}, "table")
        return routes

    def settings_for(self, topic: str) -> TableSettings:
        """The overrides of `topic` (all None when it has none)."""
        return self.overrides.get(topic, TableSettings())


def expand(template: str, topic: str) -> str:
    """`template` with `{topic}`: as is in a path or URI, mapped to name characters in a catalog name."""
    if not is_table_name(template.replace(PLACEHOLDER, "t")):
        return template.replace(PLACEHOLDER, topic)
    name = _NOT_IN_NAMES.sub("_", topic)
    parts = [part.replace(PLACEHOLDER, name) for part in template.split(".")]
    # An identifier may not start with a digit unless quoted; a quoted one keeps its text.
    return ".".join(f"`{p}`" if p[:1].isdigit() else p for p in parts)


def table_key(table: str) -> str:
    """What makes two tables the same: a catalog name without quotes and case, a path without a trailing '/'
    and without case.

    On a case-insensitive store (macOS's and Windows' file systems, some mounts) `/lake/Orders` and
    `/lake/orders` are one table, where two sinks sharing the sink id and run id would see one's batch as
    already committed by the other. Whether a store tells case apart is not known before writing, and a
    routing refused on every store does not break when it moves to another.
    """
    return _spelling(table).lower()


def _spelling(table: str) -> str:
    return table.replace("`", "") if is_table_name(table) else table.rstrip("/")


def refuse_shared(routed: Mapping[str, str], what: str) -> None:
    """ConfigError when two topics (keys: `Route.label`s) map to one `what` (a table, a dead-letter table),
    compared as `table_key` does; the message names both topics and the table (both spellings when they
    differ in case)."""
    seen: dict[str, tuple[str, str]] = {}
    for label, table in sorted(routed.items()):
        key = table_key(table)
        if key in seen:
            first, first_table = seen[key]
            raise ConfigError(f"topics {first} and {label} both go to the {what} {table}"
                              f"{_case_note(first_table, table)}: give one of them its own table")
        seen[key] = label, table


def _case_note(first: str, second: str) -> str:
    if _spelling(first) == _spelling(second):
        return ""
    if is_table_name(second):
        return f" ({first} and {second} differ only in case, and catalogs compare names without case)"
    return (f" ({first} and {second} differ only in case: one table on a case-insensitive store such as "
            "macOS's or Windows' file systems)")
