"""Avro through a schema registry: format("pykafka") decoding in its tasks against Spark's from_avro, one topic.

    .venv/bin/python bench/avro_bench.py              # 1,000,000 records, 3 runs
    .venv/bin/python bench/avro_bench.py --quick      # 100,000 records, 2 runs
    .venv/bin/python bench/avro_bench.py --schema wide   # a wide record of 50 fields instead of the order

One broker (kafka_spark.local) and one Confluent-compatible test registry (tests/harness). The records are
bench/avro_decode.py's 10-field order (nested record, array, map, enum, decimal, timestamp and date), registered
under `<topic>-value`, framed in Confluent's wire format and produced once to a 2-partition topic. Then, each
--runs times, the order reversed on every other run, after --warmup-rounds unrecorded rounds on a small topic:

- noop: `format("pykafka")` with `valueFormat=avro` (decoded in the task that fetched the records) against
  `format("kafka")` + open-source `from_avro(substring(value, 6), schema)`, both into `write.format("noop")`;
- delta: `kafka_spark.delta.load` with `value_format="avro"` (offsets in the commit) against `format("kafka")` +
  `from_avro` + a plain Delta append; a fresh table each run;
- ceilings: fastavro alone over the bare payloads, our decoder as a task runs it (`decode_batch`: framing, decode,
  the column) over Arrow batches of the framed values, per record (KAFKA_SPARK_AVRO_BLOCK=0: fastavro) and with
  the block path (one in-memory Avro container per schema id, DataFusion's reader), all in this process on one
  core (rated per CPU second: DataFusion may use a second thread); `format("pykafka")` without decoding
  into noop, the source's own floor on these bytes; and the decoded rows themselves, made beforehand (Arrow IPC
  files, one a partition, outside the clock) and yielded by a Python source that does nothing else
  (`bench/ceiling_source.py`'s `ipc-ceiling`) into noop: what handing Spark these rows costs any Python source.

Spark runs are timed from `load()` (planning, and for pykafka the registry lookup, are the user's time too) to
the action's end. Every run is checked: the Spark noop runs carry an observation (count, and the sum of the
decoded `id`, or of the value lengths when nothing is decoded), the Delta tables are read back after the clock
stops, the ceilings sum their decoded ids. Writes bench/results/avro-<stamp>.md and .json (and avro-latest.*).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test registry server (harness.schema_registry)

from bench.avro_decode import SCHEMA, SCHEMAS, payloads  # noqa: E402
from bench.avro_report import (  # noqa: E402
    BY_NAME,
    CONTENDERS,
    PARTITIONS,
    Sample,
    chosen,
    command,
    finish,
    log,
    machine,
    markdown,
    measure,
    write,
)
from bench.ceiling_source import IPC_NAME, decoded_ipc_files, payload_plan  # noqa: E402
from bench.ceiling_source import register as register_ceiling  # noqa: E402
from bench.installed import compile_package  # noqa: E402

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
WARMUP_RECORDS = 50_000
# The JVM keeps compiling the Avro paths (from_avro; Arrow to rows of nested structs) well past one pass over
# 20,000 records: the first measured runs came out 2x (from_avro) to several times (pykafka) slower than later ones.
WARMUP_ROUNDS = 2
# Records per Arrow batch handed to the in-process decoder: the source's 8 MiB fetches hold ~90,000 of these
# records, and the per-call cost of decode_batch is negligible from a few thousand up.
CEILING_CHUNK = 50_000
PRODUCE_CHUNK = 50_000
FIRST_ID = 1_000_000_000  # avro_decode.payloads: record i has id FIRST_ID + i


@dataclass
class Dataset:
    """A produced topic, its records as framed, and what every contender must read back."""

    topic: str
    schema_id: int
    framed: list[bytes]
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    log_bytes: int = 0
    produce_s: float = 0.0
    first_id: int = FIRST_ID  # record i has id first_id + i
    header: int | None = None  # bytes of framing before each payload, when the summary states it (registry_bench)

    @property
    def records(self) -> int:
        return len(self.framed)

    @property
    def id_sum(self) -> int:
        n = self.records
        return n * self.first_id + n * (n - 1) // 2

    @property
    def value_bytes(self) -> int:
        return sum(map(len, self.framed))

    def summary(self) -> dict[str, Any]:
        header = {} if self.header is None else {"header": self.header}
        return {"topic": self.topic, "records": self.records, "schema_id": self.schema_id, **header,
                "value_bytes": self.value_bytes, "log_bytes": self.log_bytes, "produce_s": self.produce_s,
                "ranges": {str(p): list(r) for p, r in self.ranges.items()}}


# ---- data -----------------------------------------------------------------------------------------------

def register(url: str, subject: str, schema: dict | None = None) -> int:
    """Register `schema` (default: the bench's) under `subject`; its id."""
    request = urllib.request.Request(f"{url}/subjects/{subject}/versions", method="POST",
                                     data=json.dumps({"schema": json.dumps(schema or SCHEMA)}).encode(),
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(json.load(answer)["id"])


def produce(node: Any, registry_url: str, topic: str, records: int) -> Dataset:
    """Register the schema, frame `records` orders with its id and produce them once, spread over PARTITIONS."""
    from kafka_spark.formats.registry.wire import frame

    schema_id = register(registry_url, f"{topic}-value")
    return produce_framed(node, topic, schema_id, [frame(schema_id, p) for p in payloads(records, SCHEMA)])


def produce_framed(node: Any, topic: str, schema_id: int, framed: list[bytes], **dataset: Any) -> Dataset:
    """Produce the `framed` values once to a new topic, record i to partition i % PARTITIONS; the Dataset
    (`dataset`: its further fields), checked against the log."""
    from kafka_spark.client import KafkaClient, Producer
    from kafka_spark.client.metadata import TopicPartition

    records = len(framed)
    # One large segment per partition: a fetch never straddles segments, as on a production broker.
    node.create_topic(topic, partitions=PARTITIONS,
                      configs={"segment.bytes": 1 << 30, "retention.ms": -1, "retention.bytes": -1})
    began = time.perf_counter()
    conf = {"bootstrap.servers": node.bootstrap, "linger.ms": 10, "batch.size": 65536, "acks": 1,
            "buffer.memory": 64 << 20}
    with Producer(conf) as producer:
        sent = []
        for at in range(0, records, PRODUCE_CHUNK):
            chunk = framed[at:at + PRODUCE_CHUNK]
            sent.append(producer.send_many(topic, chunk, partitions=[(at + i) % PARTITIONS
                                                                     for i in range(len(chunk))]))
        for s in sent:
            s.get()
        producer.flush()
    data = Dataset(topic, schema_id, framed, produce_s=time.perf_counter() - began, **dataset)
    with KafkaClient({"bootstrap.servers": node.bootstrap}) as client:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        starts, ends = client.earliest_offsets(tps), client.latest_offsets(tps)
    data.ranges = {tp.partition: (starts[tp], ends[tp]) for tp in tps}
    held = sum(e - s for s, e in data.ranges.values())
    if held != records:
        raise SystemExit(f"{topic}: produced {records} records, the log holds {held}")
    data.log_bytes = sum(f.stat().st_size for p in range(PARTITIONS)
                         for f in (node.log_dir / f"{topic}-{p}").glob("*.log"))
    return data


@contextlib.contextmanager
def services() -> Iterator[tuple[Any, str, Callable[[str, dict[str, str]], Any]]]:
    """One broker and the test registry for the `with` block: (the broker, the registry's URL, a function that
    starts a local SparkSession (app name, conf) with bench/ceiling_source.py's sources); all stopped after."""
    from harness.schema_registry import RegistryServer

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    node = start_kafka(secure=False, heap="1g")
    sessions: list[Any] = []

    def start_spark(app: str, conf: dict[str, str]) -> Any:
        log("starting Spark")
        sessions.append(local_spark(app, extra=conf))
        register_ceiling(sessions[-1])
        return sessions[-1]

    try:
        with RegistryServer() as registry:
            yield node, registry.url, start_spark
    finally:
        for spark in sessions:
            spark.stop()
        node.discard()


# ---- contenders -----------------------------------------------------------------------------------------

class SparkRunner:
    """What the registry benches' runners share: one broker, one registry and one SparkSession; the bounded
    Kafka reads, the checked noop runs, the decoded rows made beforehand and the in-process decode."""

    RAW = "pykafka-raw"  # the undecoded read: its checksum sums the value lengths
    ROWS_PREFIX = "avro-bench-rows-"

    def __init__(self, node: Any, registry_url: str, spark: Any, jvm_pid: int | None) -> None:
        self.node, self.registry_url, self.spark, self.jvm_pid = node, registry_url, spark, jvm_pid
        self._batches_of: dict[str, list[Any]] = {}
        self._decoded: dict[str, tuple[list[str], str]] = {}
        self._folders: list[Path] = []

    def options(self) -> dict[str, str]:
        """format("pykafka")'s decoding options (those the decoded rows are made with)."""
        raise NotImplementedError

    def expected(self, name: str, data: Dataset) -> int:
        """The checksum `name` must give on `data`."""
        return data.value_bytes if name == self.RAW else data.id_sum

    def close(self) -> None:
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)

    # -- Spark

    def _reader(self, fmt: str, data: Dataset, options: dict[str, str] | None = None) -> Any:
        start = json.dumps({data.topic: {str(p): s for p, (s, _) in data.ranges.items()}})
        end = json.dumps({data.topic: {str(p): e for p, (_, e) in data.ranges.items()}})
        return (self.spark.read.format(fmt).option("kafka.bootstrap.servers", self.node.bootstrap)
                .option("assign", json.dumps({data.topic: sorted(data.ranges)}))
                .option("startingOffsets", start).option("endingOffsets", end).options(**(options or {})).load())

    def _frame(self, name: str, data: Dataset) -> Any:
        """The DataFrame of the noop contender `name` (other than decoded-rows)."""
        raise NotImplementedError

    def _noop(self, name: str, data: Dataset) -> Sample:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        if name == "decoded-rows" and data.topic not in self._decoded:  # made once, outside the clock
            folder = Path(tempfile.mkdtemp(prefix=self.ROWS_PREFIX))
            self._folders.append(folder)
            self._decoded[data.topic] = decoded_ipc_files(folder, data.topic, data.framed, PARTITIONS,
                                                          self.options(), CEILING_CHUNK)
        observation = Observation(f"check-{uuid.uuid4().hex[:8]}")
        with self._watched(name) as (mem, cpu):
            # From load(): planning (for pykafka, the registry lookup of the query's schema) is the user's time too.
            started = time.perf_counter()
            df = self._decoded_rows(data) if name == "decoded-rows" else self._frame(name, data)
            total = F.sum(F.length("value")) if name == self.RAW else F.sum("value.id")
            checked = df.observe(observation, F.count(F.lit(1)).alias("n"), total.alias("checksum"))
            checked.write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - started
        seen = observation.get
        return Sample(int(seen["n"]), int(seen["checksum"] or 0), seconds, mem.peak_worker_mb,
                      cpu.seconds if cpu else None)

    def _decoded_rows(self, data: Dataset) -> Any:
        """The records as `format("pykafka")` hands them to Spark, decoded beforehand into Arrow IPC files (one a
        partition), read back by a source that only yields them."""
        files, ddl = self._decoded[data.topic]
        return self.spark.read.format(IPC_NAME).option("files", ",".join(files)).option("ddl", ddl).load()

    @contextlib.contextmanager
    def _watched(self, name: str) -> Iterator[tuple[Any, Any]]:
        """(the Python workers' peak RSS, the CPU seconds of the broker, the JVM and the workers) of a run."""
        from bench.rss import CpuSplit, WorkerMemory

        broker = self.node.process.pid if getattr(self.node, "process", None) else None
        # Spark's from_avro runs in the JVM: no Python worker memory to report for it.
        with CpuSplit(broker, self.jvm_pid) as cpu, \
                WorkerMemory(None if name.endswith("from_avro") else self.jvm_pid) as mem:
            yield mem, cpu

    # -- one process

    def _batches(self, data: Dataset) -> list[Any]:
        """Arrow batches of the framed values, as the fetcher hands them to a task, made once per data set."""
        import pyarrow as pa

        if data.topic not in self._batches_of:
            self._batches_of[data.topic] = [
                pa.RecordBatch.from_arrays([pa.array(data.framed[at:at + CEILING_CHUNK], pa.binary())],
                                           names=["value"]) for at in range(0, data.records, CEILING_CHUNK)]
        return self._batches_of[data.topic]

    def _decode_batches(self, data: Dataset, options: dict[str, str], switch: str, on: bool) -> Sample:
        """`decode_batch` over the batches with the decoding `options`, the environment's `switch` on or off."""
        import pyarrow.compute as pc

        from kafka_spark.formats.columns import decode_batch

        plan = payload_plan(options, data.topic)
        seconds, count, ids = 0.0, 0, 0
        os.environ[switch] = "1" if on else "0"
        try:
            for batch in self._batches(data):
                # CPU seconds: the rate of one core even when a native reader runs a thread beside this one
                started = time.process_time()
                decoded = decode_batch(batch, plan)
                seconds += time.process_time() - started
                count += decoded.num_rows
                ids += pc.sum(decoded.column("value").field("id")).as_py() or 0
        finally:
            os.environ.pop(switch, None)
        return Sample(count, ids, seconds)


class Runner(SparkRunner):
    """Runs the Avro contenders."""

    def __init__(self, node: Any, registry_url: str, spark: Any, jvm_pid: int | None) -> None:
        super().__init__(node, registry_url, spark, jvm_pid)
        self._bare_of: dict[str, list[bytes]] = {}

    def run(self, name: str, data: Dataset) -> Sample:
        if name == "fastavro":
            return self._fastavro(data)
        if name in ("decode-batch", "decode-block"):
            return self._decode_batch(data, block=name == "decode-block")
        if name == "datafusion-read":
            return self._datafusion_read(data)
        if name.startswith("delta-"):
            return self._delta(name, data)
        return self._noop(name, data)

    def options(self) -> dict[str, str]:
        return {"valueFormat": "avro", "schema.registry.url": self.registry_url}

    # -- Spark

    def _from_avro(self, data: Dataset) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        # Confluent's 5-byte framing cut off by hand: what a Spark user without a registry-aware reader does.
        return self._reader("kafka", data).withColumn(
            "value", from_avro(F.expr("substring(value, 6)"), json.dumps(SCHEMA)))

    def _frame(self, name: str, data: Dataset) -> Any:
        if name == "pykafka-avro":
            return self._reader("pykafka", data, self.options())
        if name == "pykafka-raw":
            return self._reader("pykafka", data)
        if name == "kafka-from_avro":
            return self._from_avro(data)
        raise ValueError(name)

    def _delta(self, name: str, data: Dataset) -> Sample:
        from pyspark.sql import functions as F

        from kafka_spark.delta import load
        from kafka_spark.sink import LoadOptions

        work = Path(tempfile.mkdtemp(prefix="avro-bench-delta-"))
        table = str(work / "table")
        try:
            with self._watched(name) as (mem, cpu):
                started = time.perf_counter()
                if name in ("delta-ours", "delta-direct"):
                    # Loads to the end of the topic: the data set is the whole topic.
                    result = load(self.spark, LoadOptions(
                        table=table, kafka={"bootstrap.servers": self.node.bootstrap}, topics=[data.topic],
                        sink_id="bench", value_format="avro", schema_registry={"url": self.registry_url},
                        writer="direct" if name == "delta-direct" else "spark"))
                    loaded: int | None = result.rows
                elif name == "delta-from_avro":
                    self._from_avro(data).write.format("delta").mode("append").save(table)
                    loaded = None
                else:
                    raise ValueError(name)
                seconds = time.perf_counter() - started
            row = self.spark.read.format("delta").load(table).agg(F.count(F.lit(1)).alias("n"),
                                                                  F.sum("value.id").alias("ids")).first()
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if loaded is not None and loaded != row["n"]:
            raise RuntimeError(f"{name}: load reported {loaded} rows, the table holds {row['n']}")
        return Sample(int(row["n"]), int(row["ids"] or 0), seconds, mem.peak_worker_mb, cpu.seconds)

    # -- one process

    def _fastavro(self, data: Dataset) -> Sample:
        import io

        import fastavro

        parsed = fastavro.parse_schema(SCHEMA)
        reader, buffer = fastavro.schemaless_reader, io.BytesIO
        bare = self._bare(data)
        seconds, count, ids = 0.0, 0, 0
        for at in range(0, len(bare), CEILING_CHUNK):
            chunk = bare[at:at + CEILING_CHUNK]
            started = time.perf_counter()
            values = [reader(buffer(p), parsed) for p in chunk]
            seconds += time.perf_counter() - started
            # The checksum outside the clock; chunks keep the decoded dicts from piling up.
            count += len(values)
            ids += sum(v["id"] for v in values)
        return Sample(count, ids, seconds)

    def _decode_batch(self, data: Dataset, block: bool) -> Sample:
        from kafka_spark.formats.avro.columnar import SWITCH, block_path_on

        if block and not block_path_on():
            raise SystemExit("decode-block needs DataFusion: pip install '.[registry]'")
        return self._decode_batches(data, self.options(), SWITCH, block)

    def _datafusion_read(self, data: Dataset) -> Sample:
        """DataFusion's read alone: the containers the block path would hand it, made outside the clock."""
        import pyarrow.compute as pc

        from kafka_spark.formats.avro.block import container_parts, framed_schema, read_container
        from kafka_spark.formats.avro.columnar import _NATIVE_LOGICAL
        from kafka_spark.formats.avro.types import normalize

        schema = json.dumps(framed_schema(normalize(json.loads(json.dumps(SCHEMA)), _NATIVE_LOGICAL)))
        seconds, count, ids = 0.0, 0, 0
        for batch in self._batches(data):
            column = batch.column("value")
            parts = container_parts(schema, column)
            started = time.process_time()
            table = read_container(parts, len(column))
            seconds += time.process_time() - started
            count += table.num_rows
            ids += pc.sum(table.column("id")).as_py() or 0
            del table, parts
        return Sample(count, ids, seconds)

    def _bare(self, data: Dataset) -> list[bytes]:
        """The payloads without their framing (fastavro reads bare Avro), made once per data set."""
        if data.topic not in self._bare_of:
            self._bare_of[data.topic] = [v[5:] for v in data.framed]
        return self._bare_of[data.topic]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records, 2 runs")
    parser.add_argument("--records", type=int, help="records (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per contender (default 3; quick 2)")
    parser.add_argument("--contenders", help=f"comma-separated subset of: {', '.join(BY_NAME)}")
    parser.add_argument("--warmup-rounds", type=int, default=WARMUP_ROUNDS,
                        help=f"unrecorded rounds of every contender on a small topic first (default {WARMUP_ROUNDS})")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--schema", choices=sorted(SCHEMAS), default="order",
                        help="the 10-field order (default) or a wide record of 50 fields")
    args = parser.parse_args(argv)
    global SCHEMA
    SCHEMA = SCHEMAS[args.schema]
    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (2 if args.quick else 3)
    names = chosen(parser, args.contenders, list(BY_NAME), [c.name for c in CONTENDERS])
    compile_package()

    from bench.rss import spark_jvm_pid

    stamp = time.strftime("%Y%m%d-%H%M%S") + ("" if args.schema == "order" else f"-{args.schema}")
    began = time.monotonic()
    result: dict[str, Any] = {"meta": {
        "command": command("avro_bench.py", argv), "when": time.strftime("%Y-%m-%d %H:%M"), "runs": runs,
        "records": records, "machine": machine(),
        "schema": SCHEMA, "seconds": 0.0}, "data": None, "warmup": None, "results": {}}

    log("starting Kafka and the schema registry")
    with services() as (node, registry_url, start_spark):
        suffix = uuid.uuid4().hex[:6]
        log(f"producing {records:,} records and {WARMUP_RECORDS:,} to warm up")
        data = produce(node, registry_url, f"avro-bench-{records}-{suffix}", records)
        warm = produce(node, registry_url, f"avro-bench-warmup-{suffix}", WARMUP_RECORDS)
        log(f"  {data.topic}: {data.value_bytes / data.records:.0f} bytes a value, {data.log_bytes / 1e6:.0f} MB "
            f"in the log, produced in {data.produce_s:.1f} s")
        result["data"], result["warmup"] = data.summary(), warm.summary()
        spark = start_spark("kafka-spark-avro-bench", SPARK_CONF)
        cores = spark.sparkContext.defaultParallelism
        result["meta"]["cores"] = cores
        with contextlib.closing(Runner(node, registry_url, spark, spark_jvm_pid())) as runner:
            # Not recorded: JIT and class loading (Kafka, Avro, Delta), Python workers and their imports, the
            # workers' decoders, on every contender.
            log(f"warming up: {args.warmup_rounds} rounds over {WARMUP_RECORDS:,} records")
            for _ in range(args.warmup_rounds):
                for name in names:
                    runner.run(name, warm)
            log(f"measuring {', '.join(names)}")

            def save(results: dict[str, Any]) -> None:
                result["results"] = results
                result["meta"]["seconds"] = time.monotonic() - began
                write(args.out, stamp, result)

            save(measure(runner, data, names, runs, cores, save))
    finish(write(args.out, stamp, result), markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
