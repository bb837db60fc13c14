"""Avro writes through a schema registry: `write.format("pykafka")` with `valueFormat=avro` (encoded column-wise in
the task) against Spark's `to_avro` with the Confluent framing prepended + `write.format("kafka")`, one run.

    .venv/bin/python bench/avro_write_bench.py                  # 1,000,000 records, 3 runs
    .venv/bin/python bench/avro_write_bench.py --quick          # 100,000 records, 2 runs
    .venv/bin/python bench/avro_write_bench.py --schema wide    # the 50-field record

The records are bench/avro_decode.py's (the 10-field order or the wide record), produced once (as avro_bench does),
read back decoded with `format("pykafka")` and cached in Spark: every writer writes that same cached DataFrame of
`value` structs to a fresh 2-partition topic, timed from `save()` to its return, the writers alternating, after
--warmup-rounds untimed writes each of the first 50,000 rows. Each written topic is checked after the clock stops:
it holds every record, and read back through the registry (`format("pykafka")`, `valueFormat=avro`) its ids sum
as the source's. Spark's `to_avro` writes Avro without the registry's framing: the reference prepends the 5 bytes
(magic 0 and the schema id) with `concat`, which is what a Spark user does by hand. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test registry server (harness.schema_registry)

import bench.avro_bench as avro_bench  # noqa: E402
from bench.avro_decode import SCHEMAS  # noqa: E402
from bench.installed import compile_package  # noqa: E402

WRITERS = {"pykafka": 'write.format("pykafka") valueFormat=avro (column-wise)',
           "spark-to_avro": 'concat(framing, to_avro(value)) → write.format("kafka") (ref)'}


def write(spark: Any, df: Any, writer: str, node: Any, registry: str, schema_id: int, topic: str) -> float:
    """Write `df` (one `value` struct column) to `topic` with `writer`; the seconds of save()."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro

    node.create_topic(topic, partitions=2)
    started = time.perf_counter()
    if writer == "pykafka":
        # the source's writer schema by id, as the reference writes with it (not one derived from the column type)
        out = (df.write.format("pykafka").option("valueFormat", "avro").option("schema.registry.url", registry)
               .option("valueSchemaId", str(schema_id)))
    else:
        framing = F.lit(b"\x00" + schema_id.to_bytes(4, "big"))
        out = df.select(F.concat(framing, to_avro("value", json.dumps(avro_bench.SCHEMA))).alias("value")).write
        out = out.format("kafka")
    out.mode("append").option("kafka.bootstrap.servers", node.bootstrap).option("topic", topic).save()
    return time.perf_counter() - started


def check(spark: Any, node: Any, registry: str, topic: str, subject: str, records: int, id_sum: int) -> None:
    """The topic holds `records` records whose ids, decoded with `subject`'s schema, sum to `id_sum`; or SystemExit."""
    from pyspark.sql import functions as F

    row = (spark.read.format("pykafka").option("kafka.bootstrap.servers", node.bootstrap).option("subscribe", topic)
           .option("valueFormat", "avro").option("valueSubject", subject).option("schema.registry.url", registry).load()
           .agg(F.count(F.lit(1)).alias("n"), F.sum("value.id").alias("ids")).first())
    if row["n"] != records or row["ids"] != id_sum:
        raise SystemExit(f"{topic}: {row['n']} records with ids summing to {row['ids']}; expected {records}, {id_sum}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records, 2 runs")
    parser.add_argument("--records", type=int, help="records (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per writer (default 3; quick 2)")
    parser.add_argument("--warmup-rounds", type=int, default=2, help="untimed writes of 50,000 rows each first")
    parser.add_argument("--schema", choices=sorted(SCHEMAS), default="order")
    args = parser.parse_args()
    avro_bench.SCHEMA = SCHEMAS[args.schema]
    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (2 if args.quick else 3)
    compile_package()

    from harness.schema_registry import RegistryServer
    from pyspark import StorageLevel

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    node = start_kafka(secure=False, heap="1g")
    spark = None
    times: dict[str, list[float]] = {w: [] for w in WRITERS}
    try:
        with RegistryServer() as registry:
            suffix = uuid.uuid4().hex[:6]
            data = avro_bench.produce(node, registry.url, f"avro-write-source-{suffix}", records)
            spark = local_spark("kafka-spark-avro-write-bench", extra=avro_bench.SPARK_CONF)
            source = avro_bench.Runner(node, registry.url, spark, None)._reader(
                "pykafka", data, {"valueFormat": "avro", "schema.registry.url": registry.url}).select("value")
            df = source.persist(StorageLevel.MEMORY_ONLY)
            if df.count() != records:
                raise SystemExit("the cached source does not hold every record")
            warm = df.limit(50_000).persist(StorageLevel.MEMORY_ONLY)
            warm.count()
            for i in range(args.warmup_rounds):
                for writer in WRITERS:
                    topic = f"avro-write-warm-{suffix}-{i}-{writer}"
                    write(spark, warm, writer, node, registry.url, data.schema_id, topic)
            for run in range(runs):
                for writer in WRITERS if run % 2 == 0 else list(reversed(WRITERS)):
                    topic = f"avro-write-{suffix}-{run}-{writer}"
                    seconds = write(spark, df, writer, node, registry.url, data.schema_id, topic)
                    check(spark, node, registry.url, topic, f"{data.topic}-value", records, data.id_sum)
                    times[writer].append(seconds)
                    print(f"  run {run + 1}/{runs} {writer}: {seconds:.2f} s", flush=True)
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
    ref = statistics.median(times["spark-to_avro"])
    print(f"\n{records:,} records ({args.schema}), {runs} runs each, Spark local[2]\n")
    print("| writer | median s | min–max s | records/s | × ref |\n|---|---:|---:|---:|---:|")
    for writer, label in WRITERS.items():
        median = statistics.median(times[writer])
        print(f"| {label} | {median:.2f} | {min(times[writer]):.2f}–{max(times[writer]):.2f} | "
              f"{records / median:,.0f} | {ref / median:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
