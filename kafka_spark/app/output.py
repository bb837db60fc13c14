"""What the applications print: progress notes on stderr, and the run summaries on stdout."""

from __future__ import annotations

import sys
from collections.abc import Mapping
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


def print_embedded(source: Source, table: str) -> None:
    """Where the demo's broker is, and how to see the table's lag against it."""
    if source.seeded:
        print(f"  seeded     {source.seeded:,} sample records into topic {SAMPLE_TOPIC!r}")
    print(f"  broker     {source.bootstrap} (local, still running; stop it with: {STOP_HINT})")
    print(f"  lag        kafka-spark delta-offsets {table} -b {source.bootstrap}")
