"""`kafka-spark delta-offsets`: the Kafka offsets a Delta table holds, per sink, and with a broker their lag.

Everything comes from the table's own files (its Delta log, read with delta-rs, and the kept offsets);
no Spark, no JVM.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from typing import Any

from kafka_spark.cli.metadata_cmd import add_client_args, client_props
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.lag import SinkLag, table_lag
from kafka_spark.delta.position import SinkCommit, committed_positions
from kafka_spark.delta.table_state import TableState, local_path
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import offsets_to_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("delta-offsets", help="Kafka offsets committed in a Delta table per sink; lag with -b")
    p.add_argument("table", help="the Delta table's directory (or file: URI)")
    p.add_argument("--sink", metavar="ID", help="only this sink id")
    add_client_args(p)
    p.set_defaults(run=run)


def _check_table(table: str) -> None:
    if TableState(table).refresh() is not None:
        return
    path = local_path(table)
    if path is not None and not path.exists():
        raise ConfigError(f"{table}: no such table directory")
    raise ConfigError(f"{table} is not a Delta table (no commit in its _delta_log)")


def _spark_json(offsets: dict[TopicPartition, int]) -> dict[str, dict[str, int]]:
    return json.loads(offsets_to_json(offsets))


def _when(ms: int) -> str:
    if ms <= 0:
        return "unknown time"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def run(args: argparse.Namespace) -> int:
    _check_table(args.table)
    props = client_props(args)
    if "bootstrap.servers" in props:
        lags = table_lag(args.table, props, args.sink)
        return _print_lags(args.table, lags, args.json)
    positions = committed_positions(args.table)
    if args.sink is not None:
        if args.sink not in positions:
            known = ", ".join(sorted(positions)) or "none"
            raise ConfigError(f"sink {args.sink!r} has not committed to {args.table} (sinks: {known})")
        positions = {args.sink: positions[args.sink]}
    return _print_positions(args.table, positions, args.json)


def _print_positions(table: str, positions: dict[str, SinkCommit], as_json: bool) -> int:
    if as_json:
        print(json.dumps({sid: {"batch": c.batch, "committed_at_ms": c.committed_at_ms,
                                "offsets": _spark_json(c.offsets)}
                          for sid, c in sorted(positions.items())}, indent=2))
        return 0
    if not positions:
        print(f"{table}: no kafka-spark sink has committed to this table")
        return 0
    for sid, c in sorted(positions.items()):
        print(f"sink {sid}: batch {c.batch}, committed {_when(c.committed_at_ms)}")
        width = max(len(tp.topic) for tp in c.offsets) if c.offsets else 5
        print(f"  {'topic':<{width}}  {'partition':>9}  {'committed':>12}")
        for tp in sorted(c.offsets):
            print(f"  {tp.topic:<{width}}  {tp.partition:>9}  {c.offsets[tp]:>12}")
    return 0


def _lag_json(lag: SinkLag) -> dict[str, Any]:
    out: dict[str, Any] = {
        "batch": lag.batch, "committed_at_ms": lag.committed_at_ms, "offsets": _spark_json(lag.committed),
        "latest": _spark_json(lag.latest), "lag": _spark_json(lag.lag), "total_lag": lag.total,
    }
    if lag.new_partitions:
        out["new_partitions"] = _spark_json(dict.fromkeys(lag.new_partitions, 0))
    if lag.missing_topics:
        out["missing_topics"] = list(lag.missing_topics)
    return out


def _print_lags(table: str, lags: dict[str, SinkLag], as_json: bool) -> int:
    if as_json:
        print(json.dumps({sid: _lag_json(lag) for sid, lag in lags.items()}, indent=2))
        return 0
    if not lags:
        print(f"{table}: no kafka-spark sink has committed to this table")
        return 0
    for sid, lag in lags.items():
        print(f"sink {sid}: batch {lag.batch}, committed {_when(lag.committed_at_ms)}")
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
