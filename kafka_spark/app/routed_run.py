"""The load and the stream with a table per topic: what they run, and their output, one line per table."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_spark.app.exits import EXIT_FAILED
from kafka_spark.app.output import TableLine, print_failed_tables, table_rows
from kafka_spark.errors import ConfigError
from kafka_spark.sink.lag import SinkLag
from kafka_spark.sink.routing import PLACEHOLDER, Routing
from kafka_spark.sink.run_result import MultiLoadResult
from kafka_spark.sink.table_names import is_table_name


def table_topics(routing: Routing | None, topics: Iterable[str]) -> dict[str, str]:
    """table -> topic for `topics` (empty when the routing cannot say)."""
    if routing is None:
        return {}
    try:
        return {r.table: r.topic for r in routing.routes_for(topics)}
    except ConfigError:
        return {}


def template_topic(routing: Routing | None, table: str) -> str | None:
    """The topic a table of the routing is named after, where the name says it: the map's, or a path
    template's (a catalog name has lost the topic's other characters)."""
    if routing is None:
        return None
    mapped = [topic for topic, name in routing.tables.items() if name == table]
    if mapped:
        return mapped[0]
    template = routing.template
    if template is None or is_table_name(template.replace(PLACEHOLDER, "t")):
        return None
    head, _, tail = template.partition(PLACEHOLDER)
    if PLACEHOLDER in tail or not (table.startswith(head) and table.endswith(tail)):
        return None
    topic = table[len(head):len(table) - len(tail)]
    return topic if topic and routing.table_for(topic) == table else None


def table_lines(result: MultiLoadResult) -> list[TableLine]:
    lags = result.lag()
    return [TableLine(r.table, r.topic, r.status, r.rows, r.table_version, lags.get(r.table), r.error)
            for r in result.tables]


def result_json(result: MultiLoadResult, lines: Sequence[TableLine]) -> dict[str, Any]:
    """`MultiLoadResult.summary()` with each table's topic."""
    summary = result.summary()
    summary["tables"] = [{**item, "topic": line.topic} for item, line in zip(summary["tables"], lines, strict=True)]
    return summary


def counts(lines: Sequence[TableLine]) -> str:
    """'2 committed, 1 up to date, 1 failed' (the statuses there are)."""
    named = {"committed": "committed", "up-to-date": "up to date", "failed": "failed"}
    found = {s: sum(1 for t in lines if t.status == s) for s in named}
    return ", ".join(f"{n} {named[s]}" for s, n in found.items() if n) or "no table"


def print_load(prog: str, sink_id: str, result: MultiLoadResult, lines: Sequence[TableLine]) -> None:
    print(f"{prog}: {len(lines)} tables of sink {sink_id!r}: {counts(lines)}")
    for line in table_rows(lines):
        print(line)
    print(f"  total      {result.rows:,} rows in {result.seconds:.1f}s ({result.records_per_second:,.0f} records/s; "
          f"driver {result.driver_seconds:.1f}s)")
    dead = [r for r in result.tables if r.dead_letters]
    for r in dead:
        print(f"  dead       {r.dead_letters:,} records of {r.table} to its dead-letter table")
    lost = [r for r in result.tables if r.lost]
    for r in lost:
        skipped = ", ".join(f"{tp}: {n:,}" for tp, n in sorted(r.lost.items()))
        print(f"  warning    {r.table}: offsets deleted by retention before they were loaded, skipped: {skipped}")
    for t in lines:
        if t.status == "failed":
            print(f"  failed     {t.table}: {t.error or 'see the log'}")


def exit_status(prog: str, lines: Sequence[TableLine]) -> int:
    """0, or EXIT_FAILED after naming each failed table on stderr."""
    if any(t.status == "failed" for t in lines):
        print_failed_tables(prog, lines)
        return EXIT_FAILED
    return 0


class RunTables:
    """A routed stream's tables over the run: rows summed over its micro-batches, the last status and version."""

    def __init__(self) -> None:
        self.lines: dict[str, TableLine] = {}

    def add(self, result: MultiLoadResult) -> list[TableLine]:
        lines = table_lines(result)
        for line in lines:
            total = self.lines.get(line.table)
            rows = line.rows + (total.rows if total else 0)
            version = line.version if line.version is not None else (total.version if total else None)
            self.lines[line.table] = TableLine(line.table, line.topic or (total.topic if total else None),
                                               line.status, rows, version, line.lag, line.error)
        return lines

    def final(self, lags: Mapping[str, SinkLag | None], known: Mapping[str, str]) -> list[TableLine]:
        """Every table: those the run wrote, and the others the routing selects now, with their lag."""
        out = []
        for table in sorted(set(self.lines) | set(lags)):
            lag = lags.get(table)
            topics = {tp.topic for tp in lag.committed} if lag is not None else set()
            topic = topics.pop() if len(topics) == 1 else known.get(table)
            seen = self.lines.get(table)
            if seen is None:
                seen = TableLine(table, topic, "up-to-date" if lag is not None else "no commit")
            out.append(TableLine(seen.table, seen.topic or topic, seen.status, seen.rows, seen.version,
                                 lag.total if lag is not None else None, seen.error))
        return out


def trigger_json(batch_id: int, result: MultiLoadResult, lines: Sequence[TableLine]) -> str:
    return json.dumps({**result_json(result, lines), "micro_batch": batch_id})
