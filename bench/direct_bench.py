"""Kafka -> Delta side by side: the sink's Spark writer, its direct writer, and Spark's own Kafka source with a
Delta append, on the same topics of one local broker, in the same run.

    .venv/bin/python bench/direct_bench.py              # 1,000,000 records of 100 B and of 1 KB, 3 runs
    .venv/bin/python bench/direct_bench.py --quick      # 100,000 records, 1 run

Each case's topic (8 partitions, no compression, null keys) is filled once by Kafka's ProducerPerformance.
Every load goes into a fresh table (deleted afterwards), timed from the call to its return; the order of the
contenders is reversed on every other run. `load spark` / `load direct` are `kafka_spark.delta.load` with
`writer="spark"` / `"direct"` (offsets committed with the rows); `kafka + delta` is
`spark.read.format("kafka")` + `write.format("delta").mode("append")` (no offsets), the reference.
Each load's peak memory is measured too: the largest peak RSS (VmHWM) of any Python worker under Spark's JVM
(`bench/rss.py`), i.e. what one task's process held at most; `--contenders` runs a subset (comma-separated).
Writes bench/results/direct-<stamp>.json and .md (and direct-latest.*).
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

from bench.cases import Case, produce
from bench.installed import compile_package

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
SIZES = (100, 1000)
PARTITIONS = 8
PEER = "kafka + delta"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def contenders(spark, bootstrap: str) -> dict[str, Callable[[str, str], None]]:
    """name -> load(topic, table)."""
    from kafka_spark.delta import LoadOptions, load

    def ours(writer: str) -> Callable[[str, str], None]:
        def run(topic: str, table: str) -> None:
            result = load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                             sink_id="bench", writer=writer))
            assert result.writer == writer, result.summary()
        return run

    def kafka_delta(topic: str, table: str) -> None:
        (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
         .option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
         .write.format("delta").mode("append").save(table))

    return {"load spark": ours("spark"), "load direct": ours("direct"), PEER: kafka_delta}


def time_once(spark, run: Callable[[str, str], None], name: str, topic: str, scratch: Path, want: int,
              memory: list[float] | None = None) -> float:
    """Seconds for one load into a fresh table; its row count is checked after the clock stops. `memory` gets
    the largest peak RSS (MB) of one Python worker during the load."""
    from bench.rss import WorkerMemory, spark_jvm_pid

    table = str(scratch / f"t-{uuid.uuid4().hex[:8]}")
    try:
        with WorkerMemory(spark_jvm_pid()) as workers:
            began = time.perf_counter()
            run(topic, table)
            seconds = time.perf_counter() - began
        if memory is not None:
            memory.append(workers.peak_worker_kb / 1024)
        rows = spark.read.format("delta").load(table).count()
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
             "| value | writer | median s | records/s | MB/s | vs kafka + delta | worker peak RSS MB |",
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
        loads = contenders(spark, node.bootstrap)
        if args.contenders:
            wanted = [c.strip() for c in args.contenders.split(",")]
            loads = {name: loads[name] for name in wanted}
        warm = produce(node, Case(100, "none", PARTITIONS, 20_000))
        for name, run in loads.items():  # JIT, Python workers, class loading: not recorded
            time_once(spark, run, name, warm.case.topic, scratch, warm.records)
        for size in sizes:
            data = produce(node, Case(size, "none", PARTITIONS, records))
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
    path = args.out / f"direct-{stamp}.json"
    path.write_text(json.dumps(result, indent=1))
    table = markdown(result)
    path.with_suffix(".md").write_text(table)
    shutil.copy(path, args.out / "direct-latest.json")
    shutil.copy(path.with_suffix(".md"), args.out / "direct-latest.md")
    print()
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
