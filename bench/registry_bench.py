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
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the test registry server (harness.schema_registry)
sys.path.append(str(ROOT / "bench"))  # the decode benches import their neighbours by plain name

from bench.avro_bench import Dataset, SparkRunner, produce_framed, services  # noqa: E402
from bench.avro_report import Sample, chosen, command, finish, log, machine, measure  # noqa: E402
from bench.ceiling_source import payload_plan  # noqa: E402
from bench.installed import compile_package  # noqa: E402
from bench.registry_report import REF, contenders, markdown, summarize, warm_up, write  # noqa: E402

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
WARMUP_RECORDS = 50_000
WARMUP_ROUNDS = 2  # as avro_bench: the JVM keeps compiling the decode paths past one pass
FIRST_ID = 1_000_000  # the decode benches' payloads: record i has id FIRST_ID + i
MESSAGE = "bench.Order"
SWITCHES = {"protobuf": "KAFKA_SPARK_PROTOBUF_BLOCK", "json-schema": "KAFKA_SPARK_JSON_SCHEMA_BLOCK"}


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
    """Frame `records` orders with the registered id and produce them once, spread over the partitions."""
    schema_id, framed, header = framed_values(fmt, registry_url, f"{topic}-value", records)
    return produce_framed(node, topic, schema_id, framed, first_id=FIRST_ID, header=header)


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

class Runner(SparkRunner):
    """Runs the contenders of one format (avro_bench's SparkRunner: the reads, the noop runs, the decoded rows)."""

    RAW = "raw"
    ROWS_PREFIX = "registry-bench-rows-"

    def __init__(self, fmt: str, node: Any, registry_url: str, spark: Any, jvm_pid: int | None) -> None:
        super().__init__(node, registry_url, spark, jvm_pid)
        self.fmt = fmt
        self._ddl: str | None = None

    def run(self, name: str, data: Dataset) -> Sample:
        if name.startswith("decode-"):
            return self._decode_batches(data, self.options(validate=name.endswith("-validate")), SWITCHES[self.fmt],
                                        on=name == "decode-column")
        return self._noop(name, data)

    def options(self, validate: bool = False) -> dict[str, str]:
        """format("pykafka")'s decoding options (the decoded rows are made without validation)."""
        out = {"valueFormat": self.fmt, "schema.registry.url": self.registry_url}
        if self.fmt == "protobuf":
            out["valueMessageName"] = MESSAGE
        elif not validate:
            out["validate"] = "false"
        return out

    # -- Spark

    def _frame(self, name: str, data: Dataset) -> Any:
        if name in ("pykafka", "pykafka-novalidate"):
            return self._reader("pykafka", data, self.options(validate=name == "pykafka"))
        if name == "raw":
            return self._reader("pykafka", data)
        if name == REF:
            return self._spark_function(data)
        raise ValueError(name)

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
            column = decode_batch(batch, payload_plan(self.options(), data.topic)).schema.field("value").type
            self._ddl = struct_fields_ddl(column)
        return self._ddl

    @contextlib.contextmanager
    def _watched(self, name: str) -> Iterator[tuple[Any, Any]]:
        """(the Python workers' peak RSS, no CPU split) of a run."""
        from bench.rss import WorkerMemory

        # Spark's functions run in the JVM: no Python worker memory to report for them.
        with WorkerMemory(None if name == REF else self.jvm_pid) as mem:
            yield mem, None


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
    names = chosen(parser, args.contenders, [c.name for c in contenders(fmt)],
                   [c.name for c in contenders(fmt) if c.default], among=f"known for {fmt}")
    compile_package()

    from bench.rss import spark_jvm_pid
    from kafka_spark.local.jars import spark_jars

    stamp = time.strftime("%Y%m%d-%H%M%S")
    began = time.monotonic()
    skipped: dict[str, str] = {}
    result: dict[str, Any] = {"meta": {
        "command": command("registry_bench.py", argv), "format": fmt, "when": time.strftime("%Y-%m-%d %H:%M"),
        "runs": runs, "records": records, "machine": machine(), "load_start": load_average(), "seconds": 0.0},
        "data": None, "warmup": None, "results": {}, "skipped": skipped}
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
    with services() as (node, registry_url, start_spark):
        suffix = uuid.uuid4().hex[:6]
        log(f"producing {records:,} records and {WARMUP_RECORDS:,} to warm up")
        data = produce(node, fmt, registry_url, f"registry-bench-{fmt}-{records}-{suffix}", records)
        warm = produce(node, fmt, registry_url, f"registry-bench-{fmt}-warmup-{suffix}", WARMUP_RECORDS)
        log(f"  {data.topic}: {data.value_bytes / data.records:.0f} bytes a value ({data.header} of framing), "
            f"{data.log_bytes / 1e6:.0f} MB in the log, produced in {data.produce_s:.1f} s")
        result["data"], result["warmup"] = data.summary(), warm.summary()
        spark = start_spark(f"kafka-spark-registry-bench-{fmt}", extra)
        cores = spark.sparkContext.defaultParallelism
        result["meta"]["cores"] = cores
        with contextlib.closing(Runner(fmt, node, registry_url, spark, spark_jvm_pid())) as runner:
            # Not recorded: JIT and class loading, Python workers and their imports, the workers' decoders.
            log(f"warming up: {args.warmup_rounds} rounds over {WARMUP_RECORDS:,} records")
            names = warm_up(runner, warm, names, args.warmup_rounds, skipped)
            log(f"measuring {', '.join(names)}")

            def save(results: dict[str, Any]) -> None:
                result["results"] = results
                result["meta"]["seconds"] = time.monotonic() - began
                result["meta"]["load_end"] = load_average()
                write(args.out, fmt, stamp, result)

            save(measure(runner, data, names, runs, cores, save, summarize))
    finish(write(args.out, fmt, stamp, result), markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
