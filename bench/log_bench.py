"""pykafka-log (segment files) beside pykafka and Spark's format("kafka") (the broker), and `kafka-spark
dump-log` beside Kafka's kafka-dump-log.sh, on the same data in one run.

    .venv/bin/python bench/log_bench.py                  # 1,000,000 records of 100 B and 1 KB, 8 partitions
    .venv/bin/python bench/log_bench.py --records 100000 --runs 1

Starts Kafka from kafka_spark.local, produces each case's topic once with Kafka's ProducerPerformance
(one 1 GiB segment size, as a production broker), stops the broker's writes by letting its checkpoints
settle, then times each Spark read into the noop sink, alternating the order run by run, and each dump
of one segment (deep iteration, output to a pipe that discards it). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cases import Case, Dataset, produce
from bench.ceiling_source import register as register_ceiling
from bench.installed import compile_package

FORMATS = ("pykafka-log", "pykafka", "kafka", "arrow-ceiling")
SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_checkpointed(node, data: Dataset) -> None:  # node: KafkaNode
    """Until the files' high watermarks reach the produced ends (the broker checkpoints every few seconds)."""
    from kafka_spark.segments import PartitionLog

    deadline = time.monotonic() + 60
    while True:
        done = True
        for p, (_, end) in data.ranges.items():
            with PartitionLog.open(str(node.log_dir / f"{data.case.topic}-{p}")) as plog:
                done &= plog.high_watermark == end
        if done:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{data.case.topic}: high watermark checkpoints did not catch up in 60 s")
        time.sleep(1)


def ceiling_reader(spark, data: Dataset):
    return (spark.read.format("arrow-ceiling").option("partitions", len(data.ranges))
            .option("rows", data.records).option("size", data.case.size))


def spark_read(spark, fmt: str, node, data: Dataset) -> float:
    """Seconds to write the whole topic into the noop sink through `fmt` (same explicit offsets for all)."""
    topic = data.case.topic
    if fmt == "arrow-ceiling":
        df = ceiling_reader(spark, data).load()
        started = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - started
    reader = (spark.read.format(fmt).option("kafka.bootstrap.servers", node.bootstrap)
              .option("assign", json.dumps({topic: sorted(data.ranges)}))
              .option("startingOffsets", json.dumps({topic: {str(p): s for p, (s, _) in data.ranges.items()}}))
              .option("endingOffsets", json.dumps({topic: {str(p): e for p, (_, e) in data.ranges.items()}})))
    if fmt == "pykafka-log":
        reader = reader.option("path", str(node.log_dir))
    df = reader.load()
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def count(spark, fmt: str, node, data: Dataset) -> int:
    topic = data.case.topic
    if fmt == "arrow-ceiling":
        return ceiling_reader(spark, data).load().count()
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", node.bootstrap).option("subscribe", topic)
    if fmt == "pykafka-log":
        reader = reader.option("path", str(node.log_dir))
    return reader.load().count()


def dump_seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--sizes", default="100,1000")
    args = parser.parse_args(argv)
    compile_package()

    from kafka_spark.local import start_kafka
    from kafka_spark.local.jars import classpath
    from kafka_spark.local.process import java_argv
    from kafka_spark.local.spark import local_spark

    log("starting Kafka")
    node = start_kafka(secure=False, heap="1g")
    rows: list[str] = []
    try:
        cases = [Case(int(size), "none", 8, args.records) for size in args.sizes.split(",")]
        datasets = []
        for case in cases:
            log(f"producing {case.topic}")
            datasets.append(produce(node, case))
            wait_checkpointed(node, datasets[-1])
        spark = local_spark("log-bench", extra=SPARK_CONF)
        register_ceiling(spark)
        for data in datasets:
            for fmt in FORMATS:  # warm-up, and the proof that all three read everything
                got = count(spark, fmt, node, data)
                if got != data.records:
                    raise SystemExit(f"{fmt} counted {got} records of {data.case.topic}, expected {data.records}")
            times: dict[str, list[float]] = {f: [] for f in FORMATS}
            for i in range(args.runs):
                for fmt in FORMATS if i % 2 == 0 else reversed(FORMATS):
                    times[fmt].append(spark_read(spark, fmt, node, data))
                    log(f"  {data.case.name} run {i + 1} {fmt}: {times[fmt][-1]:.2f} s")
            best = {f: min(t) for f, t in times.items()}
            rate = {f: data.records / s / 1e6 for f, s in best.items()}
            ratios = " | ".join(f"{best[f] / best['pykafka-log']:.1f}x" for f in FORMATS[1:3])
            rows.append(f"| {data.case.size} B x {data.records:,}, 8 partitions | "
                        + " | ".join(f"{best[f]:.2f} s ({rate[f]:.2f} M/s)" for f in FORMATS) + f" | {ratios} |")
        spark.stop()

        segment = sorted((node.log_dir / f"{datasets[0].case.topic}-0").glob("*.log"))[0]
        ours = [str(Path(sys.executable).with_name("kafka-spark")), "dump-log", str(segment), "--deep-iteration"]
        cp = classpath("kafka4")
        theirs = java_argv(cp, "kafka.tools.DumpLogSegments", ["--files", str(segment), "--deep-iteration"],
                           heap="1g")
        dumps = {"ours": [], "kafka": []}
        for i in range(args.runs):
            for who, cmd in (("ours", ours), ("kafka", theirs)) if i % 2 == 0 else (("kafka", theirs), ("ours", ours)):
                dumps[who].append(dump_seconds(cmd))
                log(f"  dump-log run {i + 1} {who}: {dumps[who][-1]:.2f} s")
        size_mb = segment.stat().st_size / 1e6
        dump_row = (f"| `dump-log --deep-iteration`, one segment ({size_mb:.0f} MB, "
                    f"{datasets[0].ranges[0][1]:,} records) | {min(dumps['ours']):.2f} s | {min(dumps['kafka']):.2f} s "
                    f"| {min(dumps['kafka']) / min(dumps['ours']):.1f}x |")
    finally:
        node.discard()

    print()
    print(f"Best of {args.runs} runs, {os.cpu_count()} CPUs, local[2], noop sink:")
    print()
    print("| data | pykafka-log (files) | pykafka (broker) | Spark format(\"kafka\") | Python-source ceiling |"
          " vs pykafka | vs kafka |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("| dump | kafka-spark | Kafka's kafka-dump-log.sh | ratio |")
    print("|---|---|---|---|")
    print(dump_row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
