"""Per-task cost of Python workers: a job of N one-row tasks of a Python data source, by worker daemon.

    .venv/bin/python bench/task_bench.py            # 16 tasks, median of 15 jobs per setting

Settings, each in a fresh local session (`local_spark`):
- pyspark.daemon over TCP (Spark's default);
- kafka_spark.local.pyspark_worker_daemon over TCP (what local sessions use: a quick ACK per task);
- pyspark.daemon over Unix domain sockets (`spark.python.unix.domain.socket.enabled`, not shipped).
The source does no work, so the time is Spark's task round trips to its Python workers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SETTINGS = {
    "pyspark.daemon, TCP": {"spark.python.daemon.module": "pyspark.daemon"},
    "kafka_spark.local.pyspark_worker_daemon, TCP": {
        "spark.python.daemon.module": "kafka_spark.local.pyspark_worker_daemon"},
    "pyspark.daemon, Unix sockets": {"spark.python.daemon.module": "pyspark.daemon",
                                     "spark.python.unix.domain.socket.enabled": "true"},
}


def measure(conf: dict[str, str], tasks: int, jobs: int) -> list[float]:
    """Seconds per job of `tasks` one-row Python tasks in a session with `conf`, after 3 warm-up jobs."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from kafka_spark.local.spark import local_spark

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(tasks)]

        def read(self, partition):
            yield (partition.value,)

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "one-row-tasks"

        def schema(self) -> str:
            return "i int"

        def reader(self, schema):
            return Reader()

    spark = local_spark("kafka-spark-task-bench", extra=conf)
    try:
        spark.dataSource.register(Source)
        times = []
        for i in range(jobs + 3):
            began = time.perf_counter()
            rows = spark.read.format("one-row-tasks").load().collect()
            if len(rows) != tasks:
                raise RuntimeError(f"{len(rows)} rows from {tasks} tasks")
            if i >= 3:
                times.append(time.perf_counter() - began)
        return times
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=15)
    parser.add_argument("--setting", help=argparse.SUPPRESS)  # one setting, in a child process
    args = parser.parse_args(argv)
    if args.setting:
        print(json.dumps(measure(SETTINGS[args.setting], args.tasks, args.jobs)))
        return 0
    base = None
    print(f"| worker daemon ({args.tasks} tasks per job, median of {args.jobs} jobs) | ms per job | ms per task | × |")
    print("|---|---:|---:|---:|")
    for name in SETTINGS:
        out = subprocess.run([sys.executable, __file__, "--setting", name, "--tasks", str(args.tasks),
                              "--jobs", str(args.jobs)], capture_output=True, text=True, check=True)
        median = statistics.median(json.loads(out.stdout.strip().splitlines()[-1])) * 1000
        base = base or median
        print(f"| {name} | {median:.0f} | {median / args.tasks:.1f} | {base / median:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
