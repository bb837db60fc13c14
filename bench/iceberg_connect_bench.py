"""Time-to-table into Apache Iceberg: kafka_spark's Iceberg stream beside Apache Iceberg's own Kafka Connect sink,
at a fixed produce rate, on one local broker, in the same run.

    .venv/bin/python bench/iceberg_connect_bench.py                      # 2,000 records/s of ~1 KB for 60 s
    .venv/bin/python bench/iceberg_connect_bench.py --connect-interval-ms 1000 --ours-trigger 1s
    .venv/bin/python bench/iceberg_connect_bench.py --rate 500 --seconds 20       # a small check

Records: bench/kdi_bench.py's JSON objects (`id`, `sent_ms`, ...; Kafka timestamp = `sent_ms` = the send time),
the same records to two topics of --partitions partitions, one per contender, both running at once:

- `connect`: `org.apache.iceberg.connect.IcebergSinkConnector` (iceberg-kafka-connect 1.11.0, Maven Central) in a
  standalone Kafka Connect 4.1 worker (tests/harness/kafka_connect.py; its jars from
  tests/harness/poms/iceberg_connect.xml, fetched by the first run), one task, values by Kafka's JsonConverter
  without schemas, the table created by the sink from the first records (`iceberg.tables.auto-create-enabled`) in
  Iceberg's JdbcCatalog on a SQLite file, commits every --connect-interval-ms (the sink's default is 300,000: five
  minutes; the bench's default is 10,000).
- `ours`: `kafka_spark.iceberg.start_stream(StreamOptions(value_schema=..., trigger=--ours-trigger))` into the
  embedded catalog (pyiceberg's SQL catalog on SQLite) in a warm Spark session (local[2]).

Each starts --settle seconds (after it consumes) before the first record. Per record: the `timestamp-ms` of the
Iceberg snapshot that first holds it minus its send time (p50/p99/max; bench/iceberg_tail.py reads the snapshots
from the tables' metadata files as they land), and the same against the moment that snapshot's metadata file
appeared. Each table must hold ids 0..N-1 once. Writes bench/results/iceberg-connect-<stamp>.json and .md (and
iceberg-connect-latest.*).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the Connect worker (harness.kafka_connect)

from bench.iceberg_tail import IcebergTail  # noqa: E402
from bench.installed import compile_package  # noqa: E402
from bench.kdi_bench import SPARK_CONF, VALUE_SCHEMA, Feed, create_topic, log  # noqa: E402
from bench.kdi_report import _cell, check_ids, time_to_table, write  # noqa: E402

POM = ROOT / "tests" / "harness" / "poms" / "iceberg_connect.xml"
SINK = "org.apache.iceberg.connect.IcebergSinkConnector"
CONTENDERS = ("connect", "ours")


def connect_classpath() -> str:
    from kafka_spark.local import jars

    return str(jars.fetch_pom(jars.cache_dir() / "jars" / "iceberg-connect", POM.read_text()).resolve() / "*")


def start_connect(node, topic: str, control: str, warehouse: Path, interval_ms: int, data_dir: Path):
    from harness.kafka_connect import KafkaConnect  # type: ignore[import-not-found]

    create_topic(node, control, 1)
    settings = {
        "connector.class": SINK, "tasks.max": 1, "topics": topic,
        "iceberg.tables": "db.connect", "iceberg.tables.auto-create-enabled": "true",
        "iceberg.control.topic": control, "iceberg.control.commit.interval-ms": interval_ms,
        "iceberg.catalog.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        "iceberg.catalog.uri": f"jdbc:sqlite:{warehouse / 'catalog.db'}",
        "iceberg.catalog.warehouse": f"file://{warehouse}", "iceberg.catalog.jdbc.schema-version": "V1",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
    }
    return KafkaConnect(node.bootstrap, {"iceberg-sink": settings}, data_dir, heap="1g",
                        classpath=connect_classpath()).start(timeout=180)


def start_ours(spark, bootstrap: str, topic: str, warehouse: Path, trigger: str):
    from kafka_spark.iceberg import IcebergCatalog, start_stream
    from kafka_spark.sink import StreamOptions

    return start_stream(spark, StreamOptions(
        table="db.ours", kafka={"bootstrap.servers": bootstrap}, topics=[topic], sink_id="bench",
        checkpoint=str(warehouse.parent / "ours-checkpoint"), trigger=trigger, starting="earliest",
        value_schema=VALUE_SCHEMA), IcebergCatalog(warehouse=str(warehouse)))


def warm_up(spark, node, scratch: Path, partitions: int) -> None:
    """JIT, class loading, Python workers and pyiceberg's imports, on a small topic of their own."""
    from bench.kdi_bench import produce_all

    topic = f"iceberg-connect-warm-{int(time.time())}"
    create_topic(node, topic, partitions)
    produce_all(node.bootstrap, topic, 5_000, 300, partitions)
    start_ours(spark, node.bootstrap, topic, scratch / "warm", "available-now").awaitTermination()
    shutil.rmtree(scratch / "warm", ignore_errors=True)
    shutil.rmtree(scratch / "ours-checkpoint", ignore_errors=True)


def wait_rows(tail: IcebergTail, want: int, timeout: float, handle: Any = None) -> None:
    """Until the table holds `want` rows; a Connect worker whose task failed ends the wait with its error."""
    deadline = time.monotonic() + timeout
    while tail.poll() < want:
        if handle is not None and hasattr(handle, "check_running"):
            handle.check_running()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{tail.table}: {tail.rows} of {want} rows after {timeout:.0f} s")
        time.sleep(0.5)
    if tail.rows != want:
        raise RuntimeError(f"{tail.table}: {tail.rows} rows, expected {want}")


def run(node, spark, args: argparse.Namespace, scratch: Path) -> list[dict[str, Any]]:
    stamp = int(time.time())
    topics = {c: f"iceberg-latency-{c}-{stamp}" for c in args.contenders}
    tables = {"connect": scratch / "connect-warehouse", "ours": scratch / "ours-warehouse"}
    running: dict[str, Any] = {}
    try:
        for c in args.contenders:
            create_topic(node, topics[c], args.partitions)
            tables[c].mkdir(parents=True, exist_ok=True)
            if c == "connect":
                running[c] = start_connect(node, topics[c], f"iceberg-control-{stamp}", tables[c],
                                           args.connect_interval_ms, scratch / "connect")
            else:
                running[c] = start_ours(spark, node.bootstrap, topics[c], tables[c], args.ours_trigger)
        ready_by = time.monotonic() + 120
        while "ours" in running and running["ours"].lastProgress is None:
            if time.monotonic() > ready_by:
                raise RuntimeError("our stream ran no trigger within 120 s")
            time.sleep(0.2)
        time.sleep(args.settle)
        log(f"time-to-table {'+'.join(args.contenders)}: {args.rate:,} records/s for {args.seconds:.0f} s")
        feed = Feed(node.bootstrap, [topics[c] for c in args.contenders], args.rate, args.seconds, args.size)
        feed.start()
        feed.join()
        if feed.error is not None:
            raise RuntimeError(f"producer: {feed.error!r}")
        for c in args.contenders:
            wait_rows(IcebergTail(tables[c]), feed.sent, args.timeout, running[c])
    finally:
        for handle in running.values():
            handle.stop()
    out = []
    for c in args.contenders:
        tail = IcebergTail(tables[c])
        tail.poll()
        nested = "" if c == "connect" else "data."
        row = {"contender": c, "rate": args.rate, "seconds": args.seconds, "sent": feed.sent,
               "producer_behind_ms": feed.behind_ms, "shape": tail.shape(),
               "time_to_table": time_to_table(tail, f"{nested}sent_ms"), "check": check_ids(tail, f"{nested}id",
                                                                                            feed.sent)}
        t = row["time_to_table"]
        log(f"time-to-table {c}: p50 {t['p50_ms']:.0f} ms, p99 {t['p99_ms']:.0f} ms, max {t['max_ms']:.0f} ms over "
            f"{t['records']:,} records in {t['commits']} snapshots; ids ok: {row['check']['ok']}")
        out.append(row)
    return out


def markdown(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [f"# Time-to-table into Iceberg: Iceberg's Kafka Connect sink beside kafka_spark ({meta['when']}, "
             f"{meta['machine']})", "", f"`{meta['command']}`", "",
             f"- records: JSON objects of ~{meta['size']} B, {meta['partitions']} partitions, one local broker, the "
             "same records to one topic per contender, both running at once",
             f"- connect: {meta['connect']}", f"- ours: {meta['ours']}", "",
             "| contender | records/s | snapshots | p50 ms | p99 ms | max ms | p50 visible ms | ids once |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in result["latency"]:
        t = r["time_to_table"]
        lines.append(f"| {r['contender']} | {r['rate']:,} | {t['commits']} | {_cell(t['p50_ms'])} | "
                     f"{_cell(t['p99_ms'])} | {_cell(t['max_ms'])} | {_cell(t['visible']['p50_ms'])} | "
                     f"{r['check']['ok']} |")
    by = {r["contender"]: r["time_to_table"] for r in result["latency"]}
    if set(by) == set(CONTENDERS):
        lines += ["", f"p50 ratio connect/ours: {by['connect']['p50_ms'] / max(by['ours']['p50_ms'], 1):.2f}x "
                      f"(> 1: ours lands records sooner)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contenders", default="connect,ours", help="connect, ours or both (default both)")
    parser.add_argument("--rate", type=int, default=2_000, help="records/s (default 2,000)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the feed runs (default 60)")
    parser.add_argument("--size", type=int, default=1000, help="bytes per JSON record (default 1000)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--connect-interval-ms", type=int, default=10_000,
                        help="the sink's iceberg.control.commit.interval-ms (its default: 300000)")
    parser.add_argument("--ours-trigger", default="1s", help="our stream's trigger (default 1s)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds between the consumers' start and the feed")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a table to fill")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if not args.contenders or set(args.contenders) - set(CONTENDERS):
        parser.error(f"--contenders: one or both of {', '.join(CONTENDERS)}")
    compile_package()
    command = " ".join([".venv/bin/python bench/iceberg_connect_bench.py", *(sys.argv[1:] if argv is None else argv)])
    result: dict[str, Any] = {"meta": {
        "command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "size": args.size,
        "partitions": args.partitions,
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, load {os.getloadavg()[0]:.1f}",
        "connect": f"iceberg-kafka-connect 1.11.0, 1 task, JdbcCatalog on SQLite, commit interval "
                   f"{args.connect_interval_ms} ms",
        "ours": f"start_stream(trigger={args.ours_trigger}, value_schema), embedded catalog (pyiceberg SQL on SQLite)"}}
    from kafka_spark.local import start_kafka

    scratch = Path(tempfile.mkdtemp(prefix="iceberg-connect-bench-"))
    if "connect" in args.contenders:
        log("fetching the sink's jars (once)")
        connect_classpath()
    log("starting Kafka")
    node = start_kafka(secure=False, heap="1g")
    spark = None
    try:
        if "ours" in args.contenders:
            from kafka_spark.local.spark import local_spark

            log("starting Spark")
            spark = local_spark("kafka-spark-iceberg-connect-bench", extra=SPARK_CONF)
            warm_up(spark, node, scratch, args.partitions)
        result["latency"] = run(node, spark, args, scratch)
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
        shutil.rmtree(scratch, ignore_errors=True)
    path = write(result, args.out, time.strftime("%Y%m%d-%H%M%S"), name="iceberg-connect", render=markdown)
    print()
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
