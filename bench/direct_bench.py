"""Kafka -> Delta side by side: the sink's Spark writer, its direct writer, and Spark's own Kafka source with a
Delta append, on the same topics of one local broker, in the same run.

    .venv/bin/python bench/direct_bench.py              # 1,000,000 records of 100 B and of 1 KB, 3 runs
    .venv/bin/python bench/direct_bench.py --quick      # 100,000 records, 1 run
    .venv/bin/python bench/direct_bench.py --backfill   # the back-fill from the broker's log dir instead
    .venv/bin/python bench/direct_bench.py --json       # JSON values parsed with value_schema

Each case's topic (8 partitions, no compression, null keys) is filled once by Kafka's ProducerPerformance.
Every load goes into a fresh table (deleted afterwards), timed from the call to its return; the order of the
contenders is reversed on every other run. `load spark` / `load direct` are `kafka_spark.delta.load` with
`writer="spark"` / `"direct"` (offsets committed with the rows); `kafka + delta` is
`spark.read.format("kafka")` + `write.format("delta").mode("append")` (no offsets), the reference.
Each load's peak memory is measured too: the largest peak RSS (VmHWM) of any Python worker under Spark's JVM
(`bench/rss.py`), i.e. what one task's process held at most; `--contenders` runs a subset (comma-separated).
With `--backfill` the contenders are `backfill` (`kafka_spark.delta.load` with `log_dirs` = the broker's log
dir: the segment files read by `pykafka-log`, written by the direct writer, committed with the offsets) beside
the same reference, once the broker has checkpointed the topic's high watermarks, and two ceilings of the
back-fill: `pykafka-log -> noop` (the read, rows handed to Spark), `decode alone, 1 process` (the same files
read and decoded to Arrow in the bench's own process, one partition after another, no Spark) and `parquet alone`
(the direct writer's Parquet files of as many generated rows of the same size in Spark tasks, no read, no commit).
With `--json` the values are JSON objects of about the case's size (`bench.cases.JSON_SCHEMA`'s fields) and every
contender parses them: `load spark` / `load direct` with `value_schema`, the reference with `from_json` into a
column `data` beside the Kafka columns; two ceilings of the direct path join them: `load direct, no parse` (the
same records loaded raw) and `parse alone, 1 process` (the tasks' parser, `SparkJson.parse`, over as many of the
same payloads in batches of 10,000 in the bench's process, no Spark).
Writes bench/results/direct-<stamp>.json and .md (and direct-latest.*; `backfill-` with `--backfill`, `json-`
with `--json`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cases import JSON_SCHEMA, Case, json_payloads, produce
from bench.installed import compile_package

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
SIZES = (100, 1000)
PARTITIONS = 8
PEER = "kafka + delta"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def contenders(spark, bootstrap: str, value_schema: str | None = None) -> dict[str, Callable[[str, str], Any]]:
    """name -> load(topic, table); with `value_schema` every contender parses the JSON values."""
    from pyspark.sql import functions as F

    from kafka_spark.delta import load
    from kafka_spark.sink import LoadOptions

    def ours(writer: str) -> Callable[[str, str], None]:
        def run(topic: str, table: str) -> None:
            result = load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                             sink_id="bench", writer=writer, value_schema=value_schema))
            assert result.writer == writer, result.summary()
        return run

    def kafka_delta(topic: str, table: str) -> None:
        df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
        if value_schema is not None:
            df = df.select("*", F.from_json(F.col("value").cast("string"), value_schema).alias("data"))
        df.write.format("delta").mode("append").save(table)

    loads: dict[str, Callable[[str, str], Any]] = {"load spark": ours("spark"), "load direct": ours("direct"),
                                                   PEER: kafka_delta}
    if value_schema is not None:
        def raw(topic: str, table: str) -> None:
            load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                    sink_id="bench", writer="direct"))

        def parse_alone(topic: str, table: str) -> int:
            import pyarrow as pa

            from kafka_spark.delta.writer_choice import parsed_struct
            from kafka_spark.formats.spark_json.parser import SparkJson

            size, count = int(topic.split("-")[1].rstrip("b")), _RECORDS[topic]
            payloads = [p.encode() for p in json_payloads(size)]
            batch = pa.array([payloads[i % len(payloads)] for i in range(10_000)], pa.binary())
            parser = SparkJson(parsed_struct(spark, value_schema))
            for _ in range(count // len(batch)):
                parser.parse(batch)
            return -1

        loads.update({"load direct, no parse": raw, "parse alone, 1 process": parse_alone})
    return loads


def backfill_contenders(spark, node, size: int) -> dict[str, Callable[[str, str], int | None]]:
    """name -> load(topic, table) for --backfill; a ceiling returns the rows it handled (-1: not counted)."""
    from bench.ceiling_source import PARQUET_NAME, register
    from kafka_spark.delta import load
    from kafka_spark.sink import LoadOptions

    register(spark)

    def backfill(topic: str, table: str) -> None:
        result = load(spark, LoadOptions(table=table, log_dirs=str(node.log_dir), topics=[topic], sink_id="bench"))
        assert result.writer == "direct", result.summary()

    def log_noop(topic: str, table: str) -> int:
        (spark.read.format("pykafka-log").option("path", str(node.log_dir)).option("subscribe", topic).load()
         .write.format("noop").mode("overwrite").save())
        return -1

    def decode_alone(topic: str, table: str) -> int:
        # The files read and decoded to Arrow in this one process, partition after partition: no Spark.
        from kafka_spark.spark.log.options import parse_log_options
        from kafka_spark.spark.log.planner import plan_log_batch
        from kafka_spark.spark.log.reader import read_log_range

        options = parse_log_options({"path": str(node.log_dir), "subscribe": topic})
        return sum(b.num_rows for r in plan_log_batch(options) for b in read_log_range(options, r))

    def parquet_alone(topic: str, table: str) -> int:
        rows = (spark.read.format(PARQUET_NAME).option("partitions", PARTITIONS).option("rows", _RECORDS[topic])
                .option("size", size).option("root", table).load().collect())
        return sum(r["records"] for r in rows)

    return {"backfill": backfill, PEER: contenders(spark, node.bootstrap)[PEER], "pykafka-log -> noop": log_noop,
            "decode alone, 1 process": decode_alone, "parquet alone": parquet_alone}


_RECORDS: dict[str, int] = {}  # topic -> records, for the ceilings


def settled(node, data):  # node: KafkaNode, data: bench.cases.Dataset
    """`data` once the broker has checkpointed its high watermarks, where a read of the files ends."""
    from bench.log_bench import wait_checkpointed

    wait_checkpointed(node, data)
    _RECORDS[data.case.topic] = data.records
    return data


def time_once(spark, run: Callable[[str, str], int | None], name: str, topic: str, scratch: Path, want: int,
              memory: list[float] | None = None) -> float:
    """Seconds for one load into a fresh table; its row count (or the count a ceiling returns) is checked after
    the clock stops. `memory` gets the largest peak RSS (MB) of one Python worker during the load."""
    from bench.rss import WorkerMemory, spark_jvm_pid

    table = str(scratch / f"t-{uuid.uuid4().hex[:8]}")
    try:
        with WorkerMemory(spark_jvm_pid()) as workers:
            began = time.perf_counter()
            counted = run(topic, table)
            seconds = time.perf_counter() - began
        if memory is not None:
            memory.append(workers.peak_worker_kb / 1024)
        rows = counted if counted is not None else spark.read.format("delta").load(table).count()
        if rows == -1:
            return seconds
        if rows != want:
            raise RuntimeError(f"{name}: the table holds {rows} rows, expected {want}")
        return seconds
    finally:
        shutil.rmtree(table, ignore_errors=True)


def markdown(result: dict[str, Any]) -> str:
    """The results as a table: median seconds, records/s and the ratio to the peer per case."""
    meta = result["meta"]
    lines = [f"`{meta['command']}` — {meta['when']}, {meta['runs']} run(s) each, {meta['records']:,} records per "
             f"case, {PARTITIONS} partitions", "",
             "| value | contender | median s | records/s | MB/s | vs kafka + delta | worker peak RSS MB |",
             "|---|---|---|---|---|---|---|"]
    for case in result["cases"]:
        peer_times = case["seconds"].get(PEER)
        for name, times in case["seconds"].items():
            median = statistics.median(times)
            ratio = f"{statistics.median(peer_times) / median:.2f}×" if peer_times else "—"
            peak = max(case.get("worker_mb", {}).get(name) or [0.0])
            lines.append(f"| {case['size']} B | {name} | {median:.2f} | {case['records'] / median:,.0f} | "
                         f"{case['records'] * case['size'] / median / 1e6:,.1f} | {ratio} | {peak:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records, 1 run")
    parser.add_argument("--records", type=int, help="records per case (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per contender and case (default 3; quick 1)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="value sizes in bytes (default 100,1000)")
    parser.add_argument("--contenders", help="a comma-separated subset of: load spark, load direct, kafka + delta")
    parser.add_argument("--json", action="store_true", help="JSON values, parsed by every contender")
    parser.add_argument("--backfill", action="store_true",
                        help="the back-fill from the broker's log dir beside kafka + delta, and its ceilings")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results",
                        help="where the JSON and Markdown results go (default bench/results)")
    args = parser.parse_args(argv)
    compile_package()
    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (1 if args.quick else 3)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    command = " ".join([".venv/bin/python bench/direct_bench.py", *(sys.argv[1:] if argv is None else argv)])
    result: dict[str, Any] = {"meta": {"command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "runs": runs,
                                       "records": records, "partitions": PARTITIONS}, "cases": []}

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    log("starting Kafka and Spark")
    node = start_kafka(secure=False, heap="1g")
    scratch = Path(tempfile.mkdtemp(prefix="kafka-spark-direct-bench-"))
    spark = None
    try:
        spark = local_spark("kafka-spark-direct-bench", extra=SPARK_CONF)
        loads: dict[str, Callable[[str, str], int | None]] = dict(
            contenders(spark, node.bootstrap, JSON_SCHEMA if args.json else None))
        if args.backfill:
            loads = backfill_contenders(spark, node, 100)
        if args.contenders:
            wanted = [c.strip() for c in args.contenders.split(",")]
            loads = {name: loads[name] for name in wanted}
        warm = settled(node, produce(node, Case(100, "none", PARTITIONS, 20_000, json=args.json)))
        for name, run in loads.items():  # JIT, Python workers, class loading: not recorded
            time_once(spark, run, name, warm.case.topic, scratch, warm.records)
        for size in sizes:
            data = settled(node, produce(node, Case(size, "none", PARTITIONS, records, json=args.json)))
            if args.backfill:
                loads = {name: run for name, run in backfill_contenders(spark, node, size).items() if name in loads}
            log(f"{data.case.topic}: {data.records:,} records of {size} B")
            seconds: dict[str, list[float]] = {name: [] for name in loads}
            memory: dict[str, list[float]] = {name: [] for name in loads}
            for r in range(runs):
                order = list(loads.items()) if r % 2 == 0 else list(reversed(loads.items()))
                for name, run in order:
                    seconds[name].append(time_once(spark, run, name, data.case.topic, scratch, data.records,
                                                   memory[name]))
                    log(f"{size} B run {r + 1}: {name} {seconds[name][-1]:.2f} s, "
                        f"worker peak {memory[name][-1]:.0f} MB")
            result["cases"].append({"size": size, "records": records, "seconds": seconds, "worker_mb": memory})
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
        shutil.rmtree(scratch, ignore_errors=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    kind = "backfill" if args.backfill else "json" if args.json else "direct"
    path = args.out / f"{kind}-{stamp}.json"
    path.write_text(json.dumps(result, indent=1))
    table = markdown(result)
    path.with_suffix(".md").write_text(table)
    shutil.copy(path, args.out / f"{kind}-latest.json")
    shutil.copy(path.with_suffix(".md"), args.out / f"{kind}-latest.md")
    print()
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
