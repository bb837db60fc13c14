"""What the applications print: progress notes on stderr, and the run summaries on stdout."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_spark.app.demo import SAMPLE_TOPIC, STOP_HINT
from kafka_spark.app.source import Source


class Notes:
    """Progress notes on stderr, prefixed with the program's name; silent for --json runs (spark-submit merges
    the driver's stderr into its stdout, and the JSON must stand alone)."""

    def __init__(self, prog: str, quiet: bool = False) -> None:
        self.prog = prog
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"{self.prog}: {text}", file=sys.stderr, flush=True)


def offset_lines(prog: str, start: Mapping[Any, int], end: Mapping[Any, int], limit: int = 24) -> list[str]:
    """One line per topic partition: the next offset to load, and where it moved from."""
    tps = sorted(end)
    width = max([len(tp.topic) for tp in tps] + [5])
    lines = []
    for tp in tps[:limit]:
        to = end[tp]
        if tp in start and start[tp] != to:
            moved = f"{start[tp]:>12,} -> {to:>12,}  (+{to - start[tp]:,})"
        else:
            moved = f"{'':>12}    {to:>12,}"
        lines.append(f"    {tp.topic:<{width}} {tp.partition:>4}  {moved}")
    if len(tps) > limit:
        lines.append(f"    ... and {len(tps) - limit} more partitions (all: {prog} --json)")
    return lines


def print_offsets(prog: str, title: str, start: Mapping[Any, int], end: Mapping[Any, int]) -> None:
    print(f"  offsets    {title}")
    for line in offset_lines(prog, start, end):
        print(line)


def print_embedded(source: Source, table: str, offsets_command: str | None = None) -> None:
    """Where the demo's broker is, and the command that shows the table's lag against it (where the table's format
    has one)."""
    if source.seeded:
        print(f"  seeded     {source.seeded:,} sample records into topic {SAMPLE_TOPIC!r}")
    print(f"  broker     {source.bootstrap} (local, still running; stop it with: {STOP_HINT})")
    if offsets_command:
        print(f"  lag        {offsets_command}")


def table_rows(tables: Sequence[TableLine]) -> list[str]:
    """One line per table of a routed run (table, topic, status, rows, Delta version, lag), and the header."""
    width = max([len(t.table) for t in tables] + [5])
    topic_width = max([len(t.topic or "-") for t in tables] + [5])
    lines = [f"    {'table':<{width}}  {'topic':<{topic_width}}  {'status':<10}  {'rows':>10}  {'version':>7}  "
             f"{'lag':>8}"]
    for t in tables:
        version = "-" if t.version is None else str(t.version)
        lag = "-" if t.lag is None else f"{t.lag:,}"
        lines.append(f"    {t.table:<{width}}  {t.topic or '-':<{topic_width}}  {t.status:<10}  {t.rows:>10,}  "
                     f"{version:>7}  {lag:>8}")
    return lines


@dataclass
class TableLine:
    """What a routed run's output says of one table."""

    table: str
    topic: str | None
    status: str
    rows: int = 0
    version: int | None = None
    lag: int | None = None
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"table": self.table, "topic": self.topic, "status": self.status, "rows": self.rows,
                "table_version": self.version, **({"lag": self.lag} if self.lag is not None else {}),
                **({"error": self.error} if self.error else {})}


def print_failed_tables(prog: str, tables: Sequence[TableLine]) -> None:
    """Each failed table and why, on stderr (stdout has the run's summary)."""
    for t in tables:
        if t.status == "failed":
            topic = f" (topic {t.topic!r})" if t.topic else ""
            print(f"{prog}: table {t.table}{topic} failed: {t.error or 'see the log'}", file=sys.stderr, flush=True)
