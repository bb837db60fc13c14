"""Freshness under load: a direct-writer stream's produce-to-table time at rising produce rates, and the highest
rate it sustains with p99 within a bound.

    .venv/bin/python bench/freshness_bench.py                                  # 2,000 .. 20,000 records/s, 60 s each
    .venv/bin/python bench/freshness_bench.py --rates 10000 --seconds 120      # one rate, longer
    .venv/bin/python bench/freshness_bench.py --triggers 0s,1s --rates 10000   # the trigger's share

For each trigger and rate: a fresh topic (--partitions) and table; `start_stream(writer="direct",
value_schema=..., trigger=T)` in a warm Spark session (local[2]) on one local broker; once the stream has run its
first trigger, a producer thread sends --rate JSON records/s of ~--size bytes (bench/kdi_bench.py's records,
Kafka timestamp = send time) for --seconds; then the table is read from its log (bench/kdi_report.py's `LogTail`):
per record, the commitInfo time of the version that first holds it minus its Kafka timestamp (p50/p99/max), ids
0..N-1 each once. A rate is *sustained* when p99 stays within --bound-ms and the producer kept its schedule (at
most 1 s behind). Trigger `0s` starts the next micro-batch as soon as the last one ends (Spark's default).

Writes bench/results/freshness-<stamp>.json and .md (and freshness-latest.*).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.installed import compile_package
from bench.kdi_bench import SPARK_CONF, Feed, create_topic, start_ours, wait_rows, warm_up
from bench.kdi_report import LogTail, agreement, check_ids, time_to_table, write

# How far behind its schedule the producer may fall for a rate to count as offered in full.
PRODUCER_SLACK_MS = 1000
# Spark's per-trigger phases (progress durationMs) whose medians say where a micro-batch's time goes.
PHASES = ("latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets", "triggerExecution")


def phase_medians(progress: list[Any]) -> dict[str, float]:
    """Median ms of each phase over the triggers that ran a micro-batch (Spark keeps the last 100 progress
    reports; the direct writer reads its rows itself, so the source's row count says nothing)."""
    ran = [p for p in progress if "addBatch" in p.durationMs]
    return {k: statistics.median(p.durationMs.get(k, 0) for p in ran) for k in PHASES} if ran else {}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def one_rate(node, spark, args: argparse.Namespace, scratch: Path, trigger: str, rate: int) -> dict[str, Any]:
    stamp = int(time.time())
    topic, table = f"fresh-{rate}-{stamp}", scratch / f"fresh-{trigger}-{rate}"
    create_topic(node, topic, args.partitions)
    commits: list[dict[str, Any]] = []
    query = start_ours(spark, node.bootstrap, topic, table, commits, trigger=trigger)
    try:
        ready_by = time.monotonic() + 120
        while query.lastProgress is None:
            if time.monotonic() > ready_by:
                raise RuntimeError("the stream ran no trigger within 120 s")
            time.sleep(0.2)
        time.sleep(args.settle)
        log(f"trigger {trigger}: {rate:,} records/s for {args.seconds:.0f} s")
        feed = Feed(node.bootstrap, [topic], rate, args.seconds, args.size)
        feed.start()
        feed.join()
        if feed.error is not None:
            raise RuntimeError(f"producer: {feed.error!r}")
        wait_rows(LogTail(table), feed.sent, args.timeout,
                  lambda: None if query.isActive else f"the stream stopped: {query.exception()}")
        phases = phase_medians(query.recentProgress)
    finally:
        query.stop()
    tail = LogTail(table)
    tail.poll()
    t = time_to_table(tail, "data.sent_ms")
    data = [c for c in commits if c["rows"]]
    row = {"trigger": trigger, "rate": rate, "seconds": args.seconds, "sent": feed.sent,
           "producer_behind_ms": feed.behind_ms, "shape": tail.shape(), "time_to_table": t,
           "rows_per_commit": feed.sent / len(data) if data else None, "phase_ms": phases,
           "check": check_ids(tail, "data.id", feed.sent), "own_freshness": agreement(t, commits)}
    row["sustained"] = bool(row["check"]["ok"] and t.get("p99_ms", float("inf")) <= args.bound_ms
                            and feed.behind_ms <= PRODUCER_SLACK_MS)
    log(f"  p50 {t['p50_ms']:.0f} ms, p99 {t['p99_ms']:.0f} ms, max {t['max_ms']:.0f} ms over {t['commits']} "
        f"commits; producer at most {feed.behind_ms:.0f} ms behind; ids ok: {row['check']['ok']}; phases {phases}")
    shutil.rmtree(table, ignore_errors=True)
    shutil.rmtree(table.parent / f"{table.name}-checkpoint", ignore_errors=True)
    return row


def markdown(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [f"# Freshness under load ({meta['when']}, {meta['machine']})", "", f"`{meta['command']}`", "",
             f"- records: JSON objects of ~{meta['size']} B, {meta['partitions']} partitions, one local broker; "
             "`start_stream(writer='direct', value_schema=...)`, Spark local[2]",
             f"- sustained: p99 ≤ {meta['bound_ms']:,} ms, every id once, the producer at most "
             f"{PRODUCER_SLACK_MS:,} ms behind its schedule", "",
             "| trigger | records/s | sent | data commits | rows / commit | p50 ms | p99 ms | max ms | "
             "producer behind ms | sustained |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in result["runs"]:
        t = r["time_to_table"]
        per = f"{r['rows_per_commit']:,.0f}" if r["rows_per_commit"] else "—"
        ok = "yes" if r["sustained"] else ("no" if r["check"]["ok"] else f"CHECK FAILED {r['check']}")
        lines.append(f"| {r['trigger']} | {r['rate']:,} | {r['sent']:,} | {t.get('commits', 0)} | {per} | "
                     f"{t.get('p50_ms', 0):,.0f} | {t.get('p99_ms', 0):,.0f} | {t.get('max_ms', 0):,.0f} | "
                     f"{r['producer_behind_ms']:,.0f} | {ok} |")
    lines += ["", "Median Spark phases of a micro-batch that read rows (ms, progress `durationMs`):", "",
              "| trigger | records/s | " + " | ".join(PHASES) + " |", "|---|---:|" + "---:|" * len(PHASES)]
    for r in result["runs"]:
        ms = r.get("phase_ms") or {}
        lines.append(f"| {r['trigger']} | {r['rate']:,} | " + " | ".join(f"{ms.get(k, 0):,.0f}" for k in PHASES) + " |")
    lines.append("")
    for trigger, best in result["highest_sustained"].items():
        lines.append(f"Highest sustained rate, trigger {trigger}: " + (f"{best:,} records/s." if best else "none."))
    lines += ["", "Per record: the commitInfo time of the Delta version that first holds it minus its Kafka "
              "timestamp (the producer's send time)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="2000,5000,10000,15000,20000", help="records/s, comma-separated")
    parser.add_argument("--triggers", default="0s", help="the stream's triggers, comma-separated (0s: back to back)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long each rate is produced")
    parser.add_argument("--size", type=int, default=1000, help="bytes per JSON record")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--bound-ms", type=int, default=2000, help="the p99 a sustained rate stays within")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds between the stream's start and the feed")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a table to fill")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",") if r.strip()]
    triggers = [t.strip() for t in args.triggers.split(",") if t.strip()]
    args.records = 20_000  # warm_up's load reads these
    compile_package()
    command = " ".join([".venv/bin/python bench/freshness_bench.py", *(sys.argv[1:] if argv is None else argv)])
    result: dict[str, Any] = {"meta": {
        "command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "size": args.size,
        "partitions": args.partitions, "bound_ms": args.bound_ms,
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, load {os.getloadavg()[0]:.1f}"},
        "runs": []}
    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    scratch = Path(tempfile.mkdtemp(prefix="freshness-bench-"))
    log("starting Kafka and Spark")
    node = start_kafka(secure=False, heap="1g")
    spark = None
    try:
        spark = local_spark("kafka-spark-freshness-bench", extra=SPARK_CONF)
        warm_up(spark, node, args, scratch)
        for trigger in triggers:
            for rate in rates:
                result["runs"].append(one_rate(node, spark, args, scratch, trigger, rate))
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
        shutil.rmtree(scratch, ignore_errors=True)
    result["highest_sustained"] = {t: max((r["rate"] for r in result["runs"] if r["trigger"] == t and r["sustained"]),
                                          default=None) for t in triggers}
    path = write(result, args.out, time.strftime("%Y%m%d-%H%M%S"), "freshness", markdown)
    print()
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
