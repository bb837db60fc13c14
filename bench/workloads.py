"""The timed workloads: each returns a `Sample` (records, payload bytes, seconds, peak worker RSS).

Spark workloads run in the benchmark's own SparkSession; client and decoder workloads run in a fresh
Python process (bench/peers.py); ConsumerPerformance is Kafka's own Java tool.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.cases import Dataset
from bench.rss import WorkerMemory

PEERS = Path(__file__).with_name("peers.py")


@dataclass
class Sample:
    """One timed run."""

    records: int
    payload_bytes: int
    seconds: float
    rss_worker_mb: float | None = None
    rss_total_mb: float | None = None


@dataclass(frozen=True)
class Workload:
    """A row of the report; `ref` marks its group's reference (the JVM peer; kafka-python for the decoder)."""

    name: str
    group: str
    label: str
    ref: bool = False


WORKLOADS = [
    Workload("pykafka-noop", "spark-noop", 'format("pykafka") → noop'),
    Workload("kafka-noop", "spark-noop", 'format("kafka") → noop', ref=True),
    Workload("pykafka-agg", "spark-agg", 'format("pykafka") → sum(length)'),
    Workload("kafka-agg", "spark-agg", 'format("kafka") → sum(length)', ref=True),
    Workload("delta-ours", "delta", "kafka_spark.delta.load (offsets in the commit)"),
    Workload("delta-pykafka", "delta", 'format("pykafka") + Delta append'),
    Workload("delta-kafka", "delta", 'format("kafka") + Delta append', ref=True),
    Workload("client-ours", "client", "kafka_spark client → Arrow"),
    Workload("kafka-python", "client", "kafka-python KafkaConsumer"),
    Workload("confluent-kafka", "client", "confluent-kafka Consumer"),
    Workload("consumer-perf", "client", "Kafka ConsumerPerformance (JVM)", ref=True),
    Workload("decoder-ours", "decoder", "decode_to_arrow on segment bytes"),
    Workload("decoder-kafka-python", "decoder", "kafka-python MemoryRecords on segment bytes", ref=True),
]
BY_NAME = {w.name: w for w in WORKLOADS}


class Runner:
    """Runs workloads against one broker and one SparkSession."""

    def __init__(self, node, spark, jvm_pid: int | None, work_dir: Path) -> None:
        self.node = node
        self.spark = spark
        self.jvm_pid = jvm_pid
        self.work_dir = work_dir
        self.profile_dir: Path | None = None

    def run(self, name: str, data: Dataset, ranges: dict[int, tuple[int, int]] | None = None) -> Sample:
        """Time workload `name` over `ranges` of the data set (default: the whole topic)."""
        ranges = ranges or data.ranges
        if name in ("client-ours", "kafka-python", "confluent-kafka", "decoder-ours", "decoder-kafka-python"):
            return self._subprocess(name, data, ranges)
        if name == "consumer-perf":
            return self._consumer_perf(data, ranges)
        return self._spark(name, data, ranges)

    # ---- Spark -----------------------------------------------------------------------------

    def _reader(self, fmt: str, data: Dataset, ranges: dict[int, tuple[int, int]]):
        topic = data.case.topic
        start = json.dumps({topic: {str(p): s for p, (s, _) in ranges.items()}})
        end = json.dumps({topic: {str(p): e for p, (_, e) in ranges.items()}})
        return (self.spark.read.format(fmt).option("kafka.bootstrap.servers", self.node.bootstrap)
                .option("assign", json.dumps({topic: sorted(ranges)}))
                .option("startingOffsets", start).option("endingOffsets", end).load())

    def _spark(self, name: str, data: Dataset, ranges: dict[int, tuple[int, int]]) -> Sample:
        want = sum(e - s for s, e in ranges.values())
        action: Callable[[], tuple[int, int]]
        if name.endswith("-noop"):
            df = self._reader(name.split("-")[0], data, ranges)

            def action() -> tuple[int, int]:
                df.write.format("noop").mode("overwrite").save()
                return want, want * data.case.size
        elif name.endswith("-agg"):
            df = self._reader(name.split("-")[0], data, ranges)
            from pyspark.sql import functions as F

            # Lengths of both columns: no column can be pruned, and no count() shortcut exists.
            query = df.agg(F.sum(F.coalesce(F.length("key"), F.lit(0))).alias("k"),
                           F.sum(F.length("value")).alias("v"), F.max("offset").alias("o"))

            def action() -> tuple[int, int]:
                row = query.collect()[0]
                return want, int(row["k"] or 0) + int(row["v"] or 0)
        elif name.startswith("delta-"):
            return self._delta(data, ranges, name.removeprefix("delta-"))
        else:
            raise ValueError(name)
        # Spark's own connector runs no Python worker: there is no Python memory to report.
        with WorkerMemory(self.jvm_pid if name.startswith("pykafka") else None) as mem:
            started = time.perf_counter()
            rows, payload = action()
            seconds = time.perf_counter() - started
        return Sample(rows, payload, seconds, mem.peak_worker_mb, mem.peak_total_mb)

    def _delta(self, data: Dataset, ranges: dict[int, tuple[int, int]], how: str) -> Sample:
        """`how`: 'ours' (the sink's load), or a source format appended to Delta without offsets."""
        from kafka_spark.delta import load
        from kafka_spark.sink import LoadOptions

        table = self.work_dir / f"delta-{uuid.uuid4().hex[:8]}"
        want = sum(e - s for s, e in ranges.values())
        try:
            with WorkerMemory(self.jvm_pid if how != "kafka" else None) as mem:
                started = time.perf_counter()
                if how == "ours":
                    # Loads everything up to the end of the topic: only whole-topic ranges are comparable.
                    result = load(self.spark, LoadOptions(table=str(table), kafka={"bootstrap.servers":
                                                                                   self.node.bootstrap},
                                                          topics=[data.case.topic], sink_id="bench"))
                    rows = result.rows
                else:
                    self._reader(how, data, ranges).write.format("delta").mode("append").save(str(table))
                    rows = want
                seconds = time.perf_counter() - started
        finally:
            shutil.rmtree(table, ignore_errors=True)
        if rows != want:
            raise RuntimeError(f"delta load wrote {rows} rows, expected {want}")
        return Sample(rows, want * data.case.size, seconds, mem.peak_worker_mb, mem.peak_total_mb)

    # ---- outside Spark ---------------------------------------------------------------------

    def _subprocess(self, name: str, data: Dataset, ranges: dict[int, tuple[int, int]]) -> Sample:
        spec = {"bootstrap": self.node.bootstrap, "topic": data.case.topic, "log_dir": str(self.node.log_dir),
                "ranges": {str(p): list(r) for p, r in ranges.items()}}
        if self.profile_dir is not None:
            spec["profile"] = str(self.profile_dir / f"{name}-{data.case.name}.txt")
        proc = subprocess.run([sys.executable, str(PEERS), name, json.dumps(spec)], capture_output=True, text=True,
                              timeout=1800, cwd=str(PEERS.parent.parent), check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{name} on {data.case.topic} failed:\n{proc.stderr[-3000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        return Sample(out["records"], out["payload_bytes"], out["seconds"], out["max_rss_mb"], out["max_rss_mb"])

    def _consumer_perf(self, data: Dataset, ranges: dict[int, tuple[int, int]]) -> Sample:
        if ranges != data.ranges:
            raise ValueError("ConsumerPerformance reads whole topics only")
        # A fresh group each run, so every run starts at the beginning of the log.
        group = f"bench-perf-{uuid.uuid4().hex[:8]}"
        out = self.node.tools.run("consumer-perf", "--topic", data.case.topic, "--messages", str(data.records),
                                  "--group", group, "--timeout", "60000", timeout=1800).stdout
        lines = [ln for ln in out.splitlines() if ln.strip()]
        header = [h.strip() for h in lines[-2].split(",")]
        values = dict(zip(header, (v.strip() for v in lines[-1].split(",")), strict=False))
        rows = int(values["data.consumed.in.nMsg"])
        # fetch.time.ms excludes JVM start and the group join, which our timings do not contain either.
        seconds = float(values["fetch.time.ms"]) / 1000
        mb = float(values["data.consumed.in.MB"])
        if rows != data.records:
            raise RuntimeError(f"ConsumerPerformance read {rows} records, expected {data.records}")
        return Sample(rows, round(mb * 1024 * 1024), seconds)


def work_dir() -> Path:
    """A scratch directory for Delta tables."""
    return Path(tempfile.mkdtemp(prefix="kafka-spark-bench-"))

