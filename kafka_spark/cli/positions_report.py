"""The Kafka positions a table holds and their lag, as the offsets commands print them (text or JSON), whatever
the table's format."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.sink.lag import SinkLag
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.routing import Routing


def spark_json(offsets: dict[TopicPartition, int]) -> dict[str, dict[str, int]]:
    return json.loads(offsets_to_json(offsets))
def when(ms: int) -> str:
    if ms <= 0:
        return "unknown time"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
def print_positions(table: str, positions: dict[str, SinkCommit], as_json: bool) -> int:
    if as_json:
        print(json.dumps({sid: {"batch": c.batch, "committed_at_ms": c.committed_at_ms,
                                "offsets": spark_json(c.offsets),
                                **({"freshness_ms": c.freshness_ms} if c.freshness_ms else {})}
                          for sid, c in sorted(positions.items())}, indent=2))
        return 0
    if not positions:
        print(f"{table}: no kafka-spark sink has committed to this table")
        return 0
    for sid, c in sorted(positions.items()):
        print(f"sink {sid}: batch {c.batch}, committed {when(c.committed_at_ms)}{fresh(c.freshness_ms)}")
        width = max(len(tp.topic) for tp in c.offsets) if c.offsets else 5
        print(f"  {'topic':<{width}}  {'partition':>9}  {'committed':>12}")
        for tp in sorted(c.offsets):
            print(f"  {tp.topic:<{width}}  {tp.partition:>9}  {c.offsets[tp]:>12}")
    return 0
def fresh(freshness_ms: dict[str, int] | None) -> str:
    """'; records 0.3s old (p50), 0.9s (p99), 1.2s (max)' as the batch was committed, or '' unrecorded."""
    if not freshness_ms:
        return ""
    parts = [f"{freshness_ms[k] / 1000:.1f}s ({k})" for k in ("p50", "p99", "max") if k in freshness_ms]
    return "; records " + parts[0].replace(" (", " old (", 1) + "".join(f", {p}" for p in parts[1:])
def lag_json(lag: SinkLag) -> dict[str, Any]:
    out: dict[str, Any] = {
        "batch": lag.batch, "committed_at_ms": lag.committed_at_ms, "offsets": spark_json(lag.committed),
        "latest": spark_json(lag.latest), "lag": spark_json(lag.lag), "total_lag": lag.total,
        **({"freshness_ms": lag.freshness_ms} if lag.freshness_ms else {}),
    }
    if lag.new_partitions:
        out["new_partitions"] = spark_json(dict.fromkeys(lag.new_partitions, 0))
    if lag.missing_topics:
        out["missing_topics"] = list(lag.missing_topics)
    return out
def print_lags(table: str, lags: dict[str, SinkLag], as_json: bool) -> int:
    if as_json:
        print(json.dumps({sid: lag_json(lag) for sid, lag in lags.items()}, indent=2))
        return 0
    if not lags:
        print(f"{table}: no kafka-spark sink has committed to this table")
        return 0
    for sid, lag in lags.items():
        print(f"sink {sid}: batch {lag.batch}, committed {when(lag.committed_at_ms)}{fresh(lag.freshness_ms)}")
        tps = sorted(set(lag.committed) | set(lag.lag))
        width = max([len(tp.topic) for tp in tps] + [5])
        print(f"  {'topic':<{width}}  {'partition':>9}  {'committed':>12}  {'latest':>12}  {'lag':>10}")
        new = set(lag.new_partitions)
        for tp in tps:
            committed = "new" if tp in new else str(lag.committed[tp])
            latest = str(lag.latest[tp]) if tp in lag.latest else "-"
            behind = str(lag.lag[tp]) if tp in lag.lag else "-"
            print(f"  {tp.topic:<{width}}  {tp.partition:>9}  {committed:>12}  {latest:>12}  {behind:>10}")
        print(f"  total lag: {lag.total} records")
        for topic in lag.missing_topics:
            print(f"  topic {topic} no longer exists on the brokers")
        if lag.behind_broker:
            names = ", ".join(str(tp) for tp in lag.behind_broker[:5])
            print(f"  warning: the table is past the broker's latest offset on {names} "
                  "(topic recreated or truncated); the next load will refuse to run")
    return 0
def table_topic(lag: SinkLag | None, table: str, known: Mapping[str, str], routing: Routing | None = None
           ) -> str | None:
    from kafka_spark.app.routed_run import template_topic

    topics = {tp.topic for tp in lag.committed} if lag is not None else set()
    return topics.pop() if len(topics) == 1 else known.get(table) or template_topic(routing, table)
def print_tables(options: LoadOptions, lags: dict[str, SinkLag | None], as_json: bool) -> int:
    from kafka_spark.app.routed_run import table_topics

    committed = {tp.topic for lag in lags.values() if lag is not None for tp in lag.committed}
    known = table_topics(options.routing, committed | set(options.topics))
    total = sum(lag.total for lag in lags.values() if lag is not None)
    if as_json:
        tables = [{"table": table, "topic": table_topic(lag, table, known, options.routing),
                   **(lag_json(lag) if lag is not None else {"committed": False})}
                  for table, lag in sorted(lags.items())]
        print(json.dumps({"sink": options.sink_id, "tables": tables, "total_lag": total}, indent=2))
        return 0
    if not lags:
        print(f"sink {options.sink_id}: no topic selected, so no table")
        return 0
    width = max(len(t) for t in lags)
    topic_width = max([len(table_topic(lag, t, known, options.routing) or "-") for t, lag in lags.items()] + [5])
    print(f"sink {options.sink_id}: {len(lags)} tables")
    print(f"  {'table':<{width}}  {'topic':<{topic_width}}  {'batch':>6}  {'committed at':<23}  {'partitions':>10}  "
          f"{'lag':>10}")
    for table, lag in sorted(lags.items()):
        topic = table_topic(lag, table, known, options.routing) or "-"
        if lag is None:
            print(f"  {table:<{width}}  {topic:<{topic_width}}  {'-':>6}  {'no commit yet':<23}  {'-':>10}  {'-':>10}")
            continue
        print(f"  {table:<{width}}  {topic:<{topic_width}}  {lag.batch:>6}  {when(lag.committed_at_ms):<23}  "
              f"{len(lag.committed):>10}  {lag.total:>10}")
    print(f"  total lag: {total} records")
    for table, lag in sorted(lags.items()):
        if lag is not None and lag.behind_broker:
            names = ", ".join(str(tp) for tp in lag.behind_broker[:5])
            print(f"  warning: {table} is past the broker's latest offset on {names} (topic recreated or "
                  "truncated); the next load will refuse to run")
    return 0

