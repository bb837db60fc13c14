"""Writes side by side: df.write.format("pykafka") (at-least-once and exactlyOnce) against Spark's
format("kafka") sink, the same DataFrame into fresh topics of one local broker.

    .venv/bin/python bench/write_bench.py               # 1,000,000 records of 100 B and of 1 KB, 3 runs
    .venv/bin/python bench/write_bench.py --quick       # 100,000 records, 1 run

The DataFrame (a string key, a value of the case's size, 4 Spark partitions) is cached and counted before any
timing; each write goes to a new 8-partition topic (deleted, and its files gone, before the next write), timed from
save() to its return, writers alternating after three untimed writes each at the case's size, with the
CPU seconds the broker, Spark's JVM and the Python workers spent meanwhile and the Python workers' peak RSS (the
largest of the runs). The broker keeps its log in memory where there is room (`MEMORY_DIR`) and Kafka's default
segment size (1 GiB). Every writer runs at its defaults (`pykafka`: batch.size 1000000; Spark's sink: the Java
producer's 16384), and `pykafka` once more at the Java producer's batch.size; and the ceiling of any Python sink
(`bench/ceiling_source.py`'s `sink-ceiling`: an Arrow writer that drains the rows Spark hands it, no producer).
Writes bench/results/write-<stamp>.json and .md (and write-latest.*).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.installed import compile_package

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
SIZES = (100, 1000)
PARTITIONS = 8
WRITERS = {
    "pykafka": ("pykafka", {}),
    "pykafka exactlyOnce": ("pykafka", {"exactlyOnce": "true"}),
    # what the sink's larger default batches are worth
    "pykafka batch.size=16384": ("pykafka", {"kafka.batch.size": "16384"}),
    "spark kafka": ("kafka", {}),
    # the ceiling of any Python sink: Spark hands the rows to a Python writer that does nothing with them
    "python sink, no work": ("sink-ceiling", {}),
}
PEER = "spark kafka"
WARM_WRITES = 3  # untimed writes of each writer at each size
OURS = "pykafka"
NO_WORK = "python sink, no work"
CPU_GROUPS = ("broker", "spark jvm", "python workers")
# Kafka's default segment size: the embedded broker's 1 MiB (a test setting, for segment-file tests) rolls a
# segment every MiB, which cost the broker ~10 CPU-s per GB written and made both sinks wait on it. A deleted
# topic's files go after a second rather than Kafka's minute (the broker's name for `file.delete.delay.ms`), and
# each write waits for them: a run writes a GB every few seconds, and a deletion during a write would charge that
# writer the broker's work of deleting an earlier writer's gigabyte. No topic is
# created on demand: Spark's cached producer asks for the deleted topics it wrote, which would create them again.
BROKER = {"log.segment.bytes": 1073741824, "log.segment.delete.delay.ms": 1000, "auto.create.topics.enable": "false"}
# The broker's log directory is in memory (/dev/shm) where there is room: on a VM's disk, the write that followed
# Spark's sink cost the broker 1.2-2.4 CPU-s more kernel time than the same write elsewhere in the order (measured
# at 1 KB: 2.5-3.5 against 1.1-1.3 s of the broker's system time, whichever writer came next; none in memory), so
# the order of the writers, not their requests, decided part of the broker's CPU. Each write's topic is deleted
# before the next, so the directory holds one write at a time.
MEMORY_DIR = Path("/dev/shm")
MEMORY_ROOM = 8 << 30


def broker_dir() -> Path | None:
    """A new directory in memory for the broker's log, or None (a temporary one on disk) without room there."""
    import tempfile

    try:
        if shutil.disk_usage(MEMORY_DIR).free < MEMORY_ROOM:
            return None
        return Path(tempfile.mkdtemp(prefix="write-bench-kafka-", dir=MEMORY_DIR))
    except OSError:
        return None


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def frame(spark, records: int, size: int):
    """`records` rows: key "k<id % 1000>", a value of `size` bytes that differs per row; cached and counted."""
    df = spark.range(0, records, 1, 4).selectExpr(
        "cast(concat('k', id % 1000) as binary) as key",
        f"cast(rpad(concat(cast(id as string), '-'), {size}, 'abcdefghij') as binary) as value")
    df = df.cache()
    assert df.count() == records
    return df


def write_once(df, node, fmt: str, options: dict[str, str], cpu: dict[str, list[float]] | None = None) -> float:
    """Seconds for one write into a fresh topic (deleted afterwards, to keep the broker's disk small); with `cpu`,
    each process group's CPU seconds during it appended there."""
    import uuid

    from bench.rss import CpuSplit, WorkerMemory, spark_jvm_pid

    topic = f"write-bench-{uuid.uuid4().hex[:8]}"
    node.tools.create_topic(topic, partitions=PARTITIONS)
    _wait_for_leaders(node.bootstrap, topic)
    writer = df.write.format(fmt).option("kafka.bootstrap.servers", node.bootstrap).option("topic", topic)
    for k, v in options.items():
        writer = writer.option(k, v)
    jvm = spark_jvm_pid()
    with CpuSplit(node.process.pid if node.process else None, jvm) as split, WorkerMemory(jvm) as memory:
        began = time.perf_counter()
        writer.mode("append").save()
        seconds = time.perf_counter() - began
    if cpu is not None:
        for group, spent in split.seconds.items():
            cpu.setdefault(group, []).append(spent)
        cpu.setdefault("worker peak RSS MB", []).append(round(memory.peak_worker_mb or 0.0, 1))
    node.tools.run("topics", "--delete", "--topic", topic)
    _wait_for_files_gone(node.log_dir, topic)
    return seconds


def _wait_for_files_gone(log_dir: Path, topic: str) -> None:
    deadline = time.monotonic() + 60
    while any(log_dir.glob(f"{topic}-*")) and time.monotonic() < deadline:
        time.sleep(0.1)


def _wait_for_leaders(bootstrap: str, topic: str) -> None:
    # Every partition's leader answers before the write: a Java idempotent producer whose first batch to a partition
    # is refused while the leader loads it can be stuck on OUT_OF_ORDER_SEQUENCE_NUMBER until delivery.timeout.ms
    # (KAFKA-15591), which stalled Spark's sink on a busy machine.
    from kafka_spark.client.kafka_client import KafkaClient
    from kafka_spark.client.metadata import TopicPartition

    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        client.latest_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])


def markdown(result: dict[str, Any]) -> str:
    """The results as a table: median seconds, records/s and the ratio to Spark's sink per case."""
    where = {"memory": ", the broker's log in memory", "disk": ", the broker's log on disk"}.get(
        result["meta"].get("broker_dir", ""), "")
    lines = [f"`{result['meta']['command']}` — {result['meta']['when']}, {result['meta']['runs']} run(s) each, "
             f"{result['meta']['records']:,} records per case{where}", "",
             "| value | writer | median s | records/s | vs Spark's sink | CPU s: broker / Spark JVM / Python | "
             "worker peak RSS MB |", "|---|---|---|---|---|---|---|"]
    for case in result["cases"]:
        peer = statistics.median(case["seconds"][PEER])
        for name, times in case["seconds"].items():
            median = statistics.median(times)
            cpu = case.get("cpu_seconds", {}).get(name, {})
            groups = " / ".join(f"{statistics.median(cpu[g]):.1f}" if cpu.get(g) else "—" for g in CPU_GROUPS)
            # Spark's own sink runs no Python: the idle workers' size says nothing of it
            worked = statistics.median(cpu.get("python workers") or [0.0]) >= 0.05
            rss = max(cpu.get("worker peak RSS MB") or [0.0]) if worked else 0.0
            lines.append(f"| {case['size']} B | {name} | {median:.1f} | {case['records'] / median:,.0f} | "
                         f"{peer / median:.2f}× | {groups} | {f'{rss:.0f}' if rss else '—'} |")
    cores = result["meta"].get("cores")
    notes = [line for case in result["cases"] for line in [ceiling(case, cores)] if line]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def ceiling(case: dict[str, Any], cores: int | None) -> str | None:
    """The CPU-bound floor of any Python sink for the case, from the same run: the broker's CPU to store the
    records (median over the `pykafka` writes) plus what Spark's JVM and the Python workers spend handing the rows
    to a sink that does nothing with them, over the machine's cores; and `pykafka`'s own floor (its CPU / cores)."""
    cpu = case.get("cpu_seconds", {})
    ours, bare = cpu.get(OURS, {}), cpu.get(NO_WORK, {})
    if not cores or not all(ours.get(g) for g in CPU_GROUPS) or not all(bare.get(g) for g in CPU_GROUPS[1:]):
        return None
    peer = statistics.median(case["seconds"][PEER])
    floor = (statistics.median(ours["broker"]) + sum(statistics.median(bare[g]) for g in CPU_GROUPS[1:])) / cores
    own = statistics.median(sum(v) for v in zip(*(ours[g] for g in CPU_GROUPS), strict=True)) / cores
    return (f"- {case['size']} B: any Python sink needs ≥ {floor:.1f} s here (at most {peer / floor:.1f}× Spark's "
            f"sink): the broker's CPU for the records plus the no-work sink's, over {cores} cores; `pykafka`'s own "
            f"CPU (all three groups) puts its floor at {own:.1f} s ({peer / own:.2f}×).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])  # the whole first paragraph
    parser.add_argument("--quick", action="store_true", help="100,000 records, 1 run")
    parser.add_argument("--records", type=int, help="records per case (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per writer and case (default 3; quick 1)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results",
                        help="where the JSON and Markdown results go (default bench/results)")
    args = parser.parse_args(argv)
    compile_package()
    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (1 if args.quick else 3)
    command = " ".join([".venv/bin/python bench/write_bench.py", *(sys.argv[1:] if argv is None else argv)])
    result: dict[str, Any] = {"meta": {"command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "runs": runs,
                                       "records": records, "cores": os.cpu_count()}, "cases": []}

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    log_dir = broker_dir()
    log(f"starting Kafka (its log directory in {log_dir or 'a temporary directory on disk'}) and Spark")
    node = start_kafka(data_dir=log_dir, secure=False, heap="1g", extra=BROKER)
    spark = None
    try:
        spark = local_spark("kafka-spark-write-bench", extra=SPARK_CONF)
        from bench.ceiling_source import register

        register(spark)
        # JIT (most of all for the JVM's producer), Python workers, class loading: not recorded
        warm = frame(spark, 200_000, 100)
        for fmt, options in WRITERS.values():
            write_once(warm, node, fmt, options)
        warm.unpersist()
        for size in SIZES:
            df = frame(spark, records, size)
            seconds: dict[str, list[float]] = {name: [] for name in WRITERS}
            cpu: dict[str, dict[str, list[float]]] = {name: {} for name in WRITERS}
            # The broker's JIT needs gigabytes at a size before its CPU a write settles (measured: 3.8, 2.7, 3.3,
            # 1.8, 1.3 CPU-s for five 1 KB gigabytes in a row), and Spark's sink kept getting faster over its first
            # timed writes after one untimed write (100 B: 1.04, 1.01, 0.87, 0.79, 0.70 s): untimed writes first.
            for _ in range(WARM_WRITES):
                for fmt, options in WRITERS.values():
                    write_once(df, node, fmt, options)
            for run in range(runs):
                for name, (fmt, options) in WRITERS.items():
                    seconds[name].append(write_once(df, node, fmt, options, cpu[name]))
                    spent = ", ".join(f"{group} {v[-1]:.1f}" for group, v in cpu[name].items())
                    log(f"{size} B run {run + 1}: {name} {seconds[name][-1]:.1f} s ({spent})")
            df.unpersist()
            result["cases"].append({"size": size, "records": records, "seconds": seconds, "cpu_seconds": cpu})
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
        if log_dir is not None:
            shutil.rmtree(log_dir, ignore_errors=True)
    result["meta"]["broker_dir"] = "memory" if log_dir is not None else "disk"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"write-{stamp}.json"
    path.write_text(json.dumps(result, indent=1))
    table = markdown(result)
    path.with_suffix(".md").write_text(table)
    shutil.copy(path, args.out / "write-latest.json")
    shutil.copy(path.with_suffix(".md"), args.out / "write-latest.md")
    print()
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
