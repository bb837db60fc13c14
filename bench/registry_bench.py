"""Protobuf and JSON Schema through a schema registry: format("pykafka") decoding in its tasks against Spark's own
functions (from_protobuf, from_json) on format("kafka"), one topic.

    .venv/bin/python bench/registry_bench.py --format protobuf            # 1,000,000 records, 3 runs
    .venv/bin/python bench/registry_bench.py --format json-schema --quick # 100,000 records, 2 runs

One broker (kafka_spark.local), the test registry (tests/harness), the order of bench/protobuf_decode.py (message
`bench.Order`, message indexes [1]) or bench/json_schema_decode.py, registered under `<topic>-value` as those benches
do, Confluent-framed and produced once to a 2-partition topic. Then, each --runs times, the order reversed on every
other run, after --warmup-rounds unrecorded rounds on a small topic:

- noop: `format("pykafka")` with `valueFormat=protobuf|json-schema` (JSON Schema with validation, the default, and
  with `validate=false`) against `format("kafka")` + `from_protobuf(substring(value, 8), "bench.Order",
  binaryDescriptorSet=...)` (the spark-protobuf jar: --protobuf-jar, or fetched with mvn) or
  `from_json(cast(substring(value, 6) as string), <our column's DDL>)`, all into `write.format("noop")`;
- ceilings: `format("pykafka")` without decoding → noop (the source's floor); `decode_batch` in this process over
  Arrow batches of 50,000 framed values, per record (KAFKA_SPARK_PROTOBUF_BLOCK=0 / KAFKA_SPARK_JSON_SCHEMA_BLOCK=0)
  and column-wise, in CPU seconds; the decoded rows, made beforehand into Arrow IPC files and yielded by
  bench/ceiling_source.py's `ipc-ceiling` → noop (what handing Spark these rows costs any Python source).

Spark runs are timed from `load()` to the action's end. Every run is checked (the noop runs by an observation: count
and the sum of the decoded `id`, or of the value lengths undecoded; the ceilings sum their ids). A contender that
fails in the warm-up is left out and named in the report. Writes bench/results/registry-<format>-<stamp>.md/.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the test registry server (harness.schema_registry)
sys.path.append(str(ROOT / "bench"))  # the decode benches import their neighbours by plain name

from bench.ceiling_source import IPC_NAME  # noqa: E402
from bench.ceiling_source import register as register_ceiling  # noqa: E402
from bench.installed import compile_package  # noqa: E402
from bench.registry_report import PARTITIONS, REF, Sample, contenders, log, markdown, measure, warm_up, write  # noqa: E402

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
WARMUP_RECORDS = 50_000
WARMUP_ROUNDS = 2  # as avro_bench: the JVM keeps compiling the decode paths past one pass
CEILING_CHUNK = 50_000  # records per Arrow batch handed to the in-process decoder
PRODUCE_CHUNK = 50_000
FIRST_ID = 1_000_000  # the decode benches' payloads: record i has id FIRST_ID + i
MESSAGE = "bench.Order"
SWITCHES = {"protobuf": "KAFKA_SPARK_PROTOBUF_BLOCK", "json-schema": "KAFKA_SPARK_JSON_SCHEMA_BLOCK"}


@dataclass
class Dataset:
    """A produced topic, its records as framed, and what every contender must read back."""

    topic: str
    schema_id: int
    framed: list[bytes]
    header: int  # bytes of Confluent framing before each payload
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    log_bytes: int = 0
    produce_s: float = 0.0

    @property
    def records(self) -> int:
        return len(self.framed)

    @property
    def id_sum(self) -> int:
        n = self.records
        return n * FIRST_ID + n * (n - 1) // 2

    @property
    def value_bytes(self) -> int:
        return sum(map(len, self.framed))

    def summary(self) -> dict[str, Any]:
        return {"topic": self.topic, "records": self.records, "schema_id": self.schema_id, "header": self.header,
                "value_bytes": self.value_bytes, "log_bytes": self.log_bytes, "produce_s": self.produce_s,
                "ranges": {str(p): list(r) for p, r in self.ranges.items()}}


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---- data -----------------------------------------------------------------------------------------------

def framed_values(fmt: str, registry_url: str, subject: str, records: int) -> tuple[int, list[bytes], int]:
    """Register the record's schema under `subject` as the decode benches do; (schema id, the framed values, the
    framing's length)."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from kafka_spark.formats.registry.wire import frame, split

    client = SchemaRegistryClient({"url": registry_url})
    if fmt == "protobuf":
        from bench.protobuf_decode import PROTO
        from bench.protobuf_decode import payloads as protobuf_payloads

        schema_id = client.register_schema(subject, Schema(PROTO, "PROTOBUF"))
        # Order is the file's second message: indexes [1], framed as a count and an index (two bytes)
        framed = [frame(schema_id, p, (1,)) for p in protobuf_payloads(records)[2]]
    else:
        from bench.json_schema_decode import SCHEMA
        from bench.json_schema_decode import payloads as json_payloads

        schema_id = client.register_schema(subject, Schema(json.dumps(SCHEMA), "JSON"))
        framed = [frame(schema_id, p) for p in json_payloads(records)]
    header = len(framed[0]) - len(split(framed[0], fmt == "protobuf")[2])
    return schema_id, framed, header


def produce(node: Any, fmt: str, registry_url: str, topic: str, records: int) -> Dataset:
    """Frame `records` orders with the registered id and produce them once, spread over PARTITIONS."""
    from kafka_spark.client import KafkaClient, Producer
    from kafka_spark.client.metadata import TopicPartition

    schema_id, framed, header = framed_values(fmt, registry_url, f"{topic}-value", records)
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
    data = Dataset(topic, schema_id, framed, header, produce_s=time.perf_counter() - began)
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


def protobuf_jar(given: Path | None) -> tuple[str | None, str]:
    """The spark-protobuf jar of the installed PySpark: `given`, one fetched before, or one mvn fetches now into
    the kafka-spark cache; (path, "") or (None, why not)."""
    from kafka_spark.local.jars import cache_dir, pyspark_version

    if given is not None:
        return (str(given), "") if given.is_file() else (None, f"{given} is not a file")
    version = pyspark_version()
    folder = cache_dir() / "jars" / f"bench-spark-protobuf-{version}"
    jar = folder / f"spark-protobuf_2.13-{version}.jar"
    if jar.is_file():
        return str(jar), ""
    artifact = f"org.apache.spark:spark-protobuf_2.13:{version}"
    log(f"fetching {artifact} with mvn")
    try:
        done = subprocess.run(["mvn", "-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
                               f"-Dartifact={artifact}", f"-DoutputDirectory={folder}"],
                              capture_output=True, text=True, timeout=600, cwd=tempfile.gettempdir())
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"mvn could not fetch {artifact}: {e}"
    if done.returncode or not jar.is_file():
        error = re.sub(r"\x1b\[[0-9;]*m|\[ERROR\] ", "", done.stdout + done.stderr)
        why = "not found" if "Could not find artifact" in error or "was not found" in error else error.strip()[:200]
        return None, f"mvn could not fetch {artifact} ({why}); pass --protobuf-jar"
    return str(jar), ""


# ---- contenders -----------------------------------------------------------------------------------------

class Runner:
    """Runs contenders against one broker, one registry and one SparkSession."""

    def __init__(self, fmt: str, node: Any, registry_url: str, spark: Any, jvm_pid: int | None) -> None:
        self.fmt, self.node, self.registry_url, self.spark, self.jvm_pid = fmt, node, registry_url, spark, jvm_pid
        self._batches: dict[str, list[Any]] = {}
        self._decoded: dict[str, tuple[list[str], str]] = {}
        self._folders: list[Path] = []
        self._ddl: str | None = None

    def run(self, name: str, data: Dataset) -> Sample:
        if name.startswith("decode-"):
            return self._decode_batch(data, column=name == "decode-column", validate=name.endswith("-validate"))
        if name == "decoded-rows" and data.topic not in self._decoded:
            self._decoded[data.topic] = self._decode_to_files(data)  # made once, outside the clock
        return self._noop(name, data)

    def expected(self, name: str, data: Dataset) -> int:
        """The checksum `name` must give on `data`."""
        return data.value_bytes if name == "raw" else data.id_sum

    def options(self, validate: bool = True) -> dict[str, str]:
        """format("pykafka")'s decoding options."""
        out = {"valueFormat": self.fmt, "schema.registry.url": self.registry_url}
        if self.fmt == "protobuf":
            out["valueMessageName"] = MESSAGE
        elif not validate:
            out["validate"] = "false"
        return out

    def _plan(self, topic: str, validate: bool = True) -> Any:
        from kafka_spark.formats.options import payload_options
        from kafka_spark.formats.plan import plan_payloads

        options = payload_options(self.options(validate))
        assert options is not None
        return plan_payloads(options, (topic,))

    # -- Spark

    def _reader(self, fmt: str, data: Dataset, options: dict[str, str] | None = None) -> Any:
        start = json.dumps({data.topic: {str(p): s for p, (s, _) in data.ranges.items()}})
        end = json.dumps({data.topic: {str(p): e for p, (_, e) in data.ranges.items()}})
        return (self.spark.read.format(fmt).option("kafka.bootstrap.servers", self.node.bootstrap)
                .option("assign", json.dumps({data.topic: sorted(data.ranges)}))
                .option("startingOffsets", start).option("endingOffsets", end).options(**(options or {})).load())

    def _spark_function(self, data: Dataset) -> Any:
        """format("kafka") and Spark's own function on the value, the framing cut off by hand: what a Spark user
        without a registry-aware reader does."""
        from pyspark.sql import functions as F

        cut = F.expr(f"substring(value, {data.header + 1})")
        if self.fmt == "protobuf":
            from pyspark.sql.protobuf.functions import from_protobuf

            value = from_protobuf(cut, MESSAGE, binaryDescriptorSet=descriptor_set())
        else:
            value = F.from_json(cut.cast("string"), self._json_ddl(data))
        return self._reader("kafka", data).withColumn("value", value)

    def _json_ddl(self, data: Dataset) -> str:
        """The Spark DDL of our reader's value column for this record: from_json yields the same columns."""
        if self._ddl is None:
            import pyarrow as pa

            from kafka_spark.formats.columns import decode_batch
            from kafka_spark.formats.spark_ddl import struct_fields_ddl

            batch = pa.RecordBatch.from_arrays([pa.array(data.framed[:10], pa.binary())], names=["value"])
            column = decode_batch(batch, self._plan(data.topic, validate=False)).schema.field("value").type
            self._ddl = struct_fields_ddl(column)
        return self._ddl

    def _noop(self, name: str, data: Dataset) -> Sample:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        from bench.rss import WorkerMemory

        observation = Observation(f"check-{uuid.uuid4().hex[:8]}")
        # Spark's functions run in the JVM: no Python worker memory to report for them.
        with WorkerMemory(None if name == REF else self.jvm_pid) as mem:
            # From load(): planning (for pykafka, the registry lookup of the query's schema) is the user's time too.
            started = time.perf_counter()
            if name in ("pykafka", "pykafka-novalidate"):
                df = self._reader("pykafka", data, self.options(validate=name == "pykafka"))
            elif name == "raw":
                df = self._reader("pykafka", data)
            elif name == REF:
                df = self._spark_function(data)
            elif name == "decoded-rows":
                files, ddl = self._decoded[data.topic]
                df = self.spark.read.format(IPC_NAME).option("files", ",".join(files)).option("ddl", ddl).load()
            else:
                raise ValueError(name)
            total = F.sum(F.length("value")) if name == "raw" else F.sum("value.id")
            checked = df.observe(observation, F.count(F.lit(1)).alias("n"), total.alias("checksum"))
            checked.write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - started
        seen = observation.get
        return Sample(int(seen["n"]), int(seen["checksum"] or 0), seconds, mem.peak_worker_mb)

    def _decode_to_files(self, data: Dataset) -> tuple[list[str], str]:
        """The records as format("pykafka") hands them to Spark, decoded beforehand into Arrow IPC files (one a
        partition), read back by a source that only yields them."""
        import pyarrow as pa

        from kafka_spark.formats.columns import decode_batch
        from kafka_spark.formats.spark_ddl import struct_fields_ddl

        plan = self._plan(data.topic, validate=False)
        folder = Path(tempfile.mkdtemp(prefix="registry-bench-rows-"))
        self._folders.append(folder)
        files, schema = [], None
        for partition in range(PARTITIONS):
            path = str(folder / f"part-{partition}.arrow")
            values = data.framed[partition::PARTITIONS]  # produce() spreads record i to partition i % PARTITIONS
            writer = None
            for at in range(0, len(values), CEILING_CHUNK):
                chunk = values[at:at + CEILING_CHUNK]
                n = len(chunk)
                decoded = decode_batch(pa.RecordBatch.from_arrays([pa.array(chunk, pa.binary())], names=["value"]),
                                       plan).column("value")
                batch = pa.RecordBatch.from_arrays([
                    pa.nulls(n, pa.binary()), decoded, pa.array([data.topic] * n, pa.string()),
                    pa.array([partition] * n, pa.int32()), pa.array(range(at, at + n), pa.int64()),
                    pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
                ], names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"])
                if writer is None:
                    schema = batch.schema
                    writer = pa.ipc.new_file(path, schema)
                writer.write_batch(batch)
            assert writer is not None
            writer.close()
            files.append(path)
        assert schema is not None
        return files, struct_fields_ddl(pa.struct(list(schema)))

    def close(self) -> None:
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)

    # -- one process

    def _decode_batch(self, data: Dataset, column: bool, validate: bool) -> Sample:
        import pyarrow as pa
        import pyarrow.compute as pc

        from kafka_spark.formats.columns import decode_batch

        if data.topic not in self._batches:  # Arrow batches of the framed values, as the fetcher hands a task
            self._batches[data.topic] = [
                pa.RecordBatch.from_arrays([pa.array(data.framed[at:at + CEILING_CHUNK], pa.binary())],
                                           names=["value"]) for at in range(0, data.records, CEILING_CHUNK)]
        plan = self._plan(data.topic, validate)
        switch = SWITCHES[self.fmt]
        seconds, count, ids = 0.0, 0, 0
        os.environ[switch] = "1" if column else "0"
        try:
            for batch in self._batches[data.topic]:
                # CPU seconds: the rate of one core even when a native parser runs a thread beside this one
                started = time.process_time()
                decoded = decode_batch(batch, plan)
                seconds += time.process_time() - started
                count += decoded.num_rows
                ids += pc.sum(decoded.column("value").field("id")).as_py() or 0
        finally:
            os.environ.pop(switch, None)
        return Sample(count, ids, seconds)


def descriptor_set() -> bytes:
    """A FileDescriptorSet of bench/protobuf_decode.py's schema and its imports, as from_protobuf takes it."""
    from google.protobuf import descriptor_pb2

    from bench.protobuf_decode import PROTO
    from kafka_spark.formats.encoding import InlineSource
    from kafka_spark.formats.model import RegisteredSchema
    from kafka_spark.formats.protobuf.codec import protobuf_decoder

    schema = RegisteredSchema(PROTO, "PROTOBUF", id=1)
    root = protobuf_decoder(schema, InlineSource(schema), None, MESSAGE).descriptor.file
    out, seen = descriptor_pb2.FileDescriptorSet(), set()

    def add(file: Any) -> None:  # imports first
        if file.name in seen:
            return
        seen.add(file.name)
        for dependency in file.dependencies:
            add(dependency)
        file.CopyToProto(out.file.add())

    add(root)
    return out.SerializeToString()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=sorted(SWITCHES), required=True, dest="fmt")
    parser.add_argument("--quick", action="store_true", help="100,000 records, 2 runs")
    parser.add_argument("--records", type=int, help="records (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per contender (default 3; quick 2)")
    parser.add_argument("--contenders", help="comma-separated subset of the format's contenders")
    parser.add_argument("--warmup-rounds", type=int, default=WARMUP_ROUNDS,
                        help=f"unrecorded rounds of every contender on a small topic first (default {WARMUP_ROUNDS})")
    parser.add_argument("--protobuf-jar", type=Path, help="the spark-protobuf jar (default: fetched with mvn)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    fmt = args.fmt
    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (2 if args.quick else 3)
    known = [c.name for c in contenders(fmt)]
    names = [c.name for c in contenders(fmt) if c.default]
    if args.contenders:
        names = [n.strip() for n in args.contenders.split(",") if n.strip()]
        unknown = set(names) - set(known)
        if unknown:
            parser.error(f"unknown contenders {sorted(unknown)}; known for {fmt}: {', '.join(known)}")
    compile_package()

    from harness.schema_registry import RegistryServer

    from bench.rss import spark_jvm_pid
    from kafka_spark.local import start_kafka
    from kafka_spark.local.jars import spark_jars
    from kafka_spark.local.spark import local_spark

    stamp = time.strftime("%Y%m%d-%H%M%S")
    began = time.monotonic()
    skipped: dict[str, str] = {}
    result: dict[str, Any] = {"meta": {
        "command": " ".join([".venv/bin/python bench/registry_bench.py",
                             *map(shlex.quote, sys.argv[1:] if argv is None else argv)]),
        "format": fmt, "when": time.strftime("%Y-%m-%d %H:%M"), "runs": runs, "records": records,
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}",
        "load_start": load_average(), "seconds": 0.0}, "data": None, "warmup": None, "results": {},
        "skipped": skipped}
    extra = dict(SPARK_CONF)
    if fmt == "protobuf" and REF in names:
        jar, why = protobuf_jar(args.protobuf_jar)
        if jar is None:
            log(f"  {REF} left out: {why}")
            skipped[REF] = why
            names.remove(REF)
        else:
            extra["spark.jars"] = ",".join([*spark_jars(), jar])  # local_spark's jars and this one
            result["meta"]["protobuf_jar"] = jar

    log(f"starting Kafka and the schema registry (load average {result['meta']['load_start']})")
    node = start_kafka(secure=False, heap="1g")
    spark = None
    try:
        with RegistryServer() as registry:
            suffix = uuid.uuid4().hex[:6]
            log(f"producing {records:,} records and {WARMUP_RECORDS:,} to warm up")
            data = produce(node, fmt, registry.url, f"registry-bench-{fmt}-{records}-{suffix}", records)
            warm = produce(node, fmt, registry.url, f"registry-bench-{fmt}-warmup-{suffix}", WARMUP_RECORDS)
            log(f"  {data.topic}: {data.value_bytes / data.records:.0f} bytes a value ({data.header} of framing), "
                f"{data.log_bytes / 1e6:.0f} MB in the log, produced in {data.produce_s:.1f} s")
            result["data"], result["warmup"] = data.summary(), warm.summary()
            log("starting Spark")
            spark = local_spark(f"kafka-spark-registry-bench-{fmt}", extra=extra)
            cores = spark.sparkContext.defaultParallelism
            result["meta"]["cores"] = cores
            register_ceiling(spark)
            runner = Runner(fmt, node, registry.url, spark, spark_jvm_pid())
            # Not recorded: JIT and class loading, Python workers and their imports, the workers' decoders.
            log(f"warming up: {args.warmup_rounds} rounds over {WARMUP_RECORDS:,} records")
            names = warm_up(runner, warm, names, args.warmup_rounds, skipped)
            log(f"measuring {', '.join(names)}")

            def save(results: dict[str, Any]) -> None:
                result["results"] = results
                result["meta"]["seconds"] = time.monotonic() - began
                result["meta"]["load_end"] = load_average()
                write(args.out, fmt, stamp, result)

            try:
                save(measure(runner, data, names, runs, cores, save))
            finally:
                runner.close()
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
    path = write(args.out, fmt, stamp, result)
    print()
    print(markdown(result))
    log(f"wrote {path} and {path.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
