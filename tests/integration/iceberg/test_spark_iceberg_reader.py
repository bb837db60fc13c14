"""The Iceberg sink's tables as Apache Iceberg's own Spark runtime reads them (iceberg-spark-runtime-4.1 1.12.0,
under PySpark 4.1 in a cached environment of its own): the same rows as pyiceberg reads and as were produced,
every offset once, the snapshots' summaries with the sink's offsets, and an older snapshot by its id.

One Spark JVM reads every table (spark_iceberg_read.py); the tables come from the repository's Spark and pyiceberg.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from harness.fetch import ensure
from iceberg_support import new_topic
from wheel_build import run

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.producer import Producer
from kafka_spark.iceberg import load
from kafka_spark.local.process import QUICK_JIT, quick_start
from kafka_spark.sink import LoadOptions, SinkCommit

READER = Path(__file__).parent / "spark_iceberg_read.py"
# The newest Spark that Iceberg 1.12 has a runtime for, in the compat tests' environment of it.
PYSPARK = "4.1.4"
RECORDS, PARTITIONS, FIRST_BATCH = 300, 3, 200
BASE = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
# Parsed into a struct column: a nested struct with an array, a timestamp and a double, as the sink types them.
VALUE_SCHEMA = "n INT, at TIMESTAMP, who STRUCT<name: STRING, tags: ARRAY<STRING>>, amount DOUBLE"
# The Spark types Iceberg's reader gives the columns: the Kafka source's own (Iceberg's timestamptz is Spark's
# TIMESTAMP, not TIMESTAMP_NTZ), and the parsed value's as VALUE_SCHEMA declares them.
KAFKA_COLUMNS = "key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,timestampType:int"
SPARK_SCHEMAS = {
    "raw": f"struct<{KAFKA_COLUMNS},headers:array<struct<key:string,value:binary>>>",
    "parsed": f"struct<{KAFKA_COLUMNS},data:struct<n:int,at:timestamp,who:struct<name:string,tags:array<string>>,"
              "amount:double>>",
}


def produced(producer: Producer, topic: str) -> list[tuple[int, bytes, bytes, datetime, list[tuple[str, bytes]]]]:
    """RECORDS records over the partitions, each with its own timestamp and headers; what was sent, as
    (partition, key, value, timestamp, headers)."""
    sent = []
    # Recent record timestamps: the broker's time retention deletes older ones while the test runs.
    now = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    for i in range(RECORDS):
        at = BASE + timedelta(seconds=i, microseconds=123_456 + i)
        value = json.dumps({"n": i, "at": at.isoformat(), "who": {"name": f"user{i % 5}", "tags": ["t"] * (i % 3)},
                            "amount": i * 1.25}).encode()
        key = f"k{i % 7}".encode()
        stamp = now + timedelta(milliseconds=1_000 * i + i % 1_000)   # Kafka keeps milliseconds
        headers = [("i", str(i).encode()), ("even", b"1" if i % 2 == 0 else b"0")]
        producer.send(topic, value, key=key, headers=headers, partition=i % PARTITIONS,
                      timestamp_ms=int(stamp.timestamp() * 1000))
        sent.append((i % PARTITIONS, key, value, stamp, headers))
    producer.flush()
    return sent


def read_with_iceberg_spark(python: Path, reads: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """Run the reader in the PySpark 4.1 environment with Iceberg's runtime jar; its JSON line."""
    jar = next(ensure("iceberg").glob("iceberg-spark-runtime-4.1_2.13-*.jar"))
    quick = " ".join([*QUICK_JIT, "-XX:+UseSerialGC"]) if quick_start() else ""
    spec = out / "spec.json"
    spec.write_text(json.dumps({"jar": str(jar), "java_options": quick, "reads": reads}))
    # That environment's interpreter runs Spark's Python side; this one's paths and Spark must not leak in.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    proc = run([str(python), str(READER), str(spec), str(out)], env=env, cwd=out, timeout=600)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def arrow_rows(path: Path) -> list[dict[str, Any]]:
    with pa.memory_map(str(path)) as source:
        return ordered(pa.ipc.open_file(source).read_all())


def ordered(table: pa.Table) -> list[dict[str, Any]]:
    """The rows as Python values (timestamps as aware datetimes, binary as bytes), by partition and offset: so
    that Arrow's type widths (binary or large_binary) and time-zone labels do not matter, values do."""
    return sorted(table.to_pylist(), key=lambda r: (r["partition"], r["offset"]))


def pyiceberg_snapshots(table: Any) -> dict[int, tuple[int | None, str, dict[str, str]]]:
    """snapshot id -> (parent, operation, summary) as pyiceberg reads the table's metadata (the summary without
    the operation, which both readers give apart)."""
    return {snap.snapshot_id: (snap.parent_snapshot_id, snap.summary.operation.value,
                               dict(snap.summary.additional_properties)) for snap in table.snapshots()}


@pytest.mark.timeout(1800)  # a cold machine builds the PySpark 4.1 environment (and PySpark's wheel) once
def test_icebergs_spark_runtime_reads_the_sinks_tables(kafka, spark, producer, catalog, pyspark_envs,
                                                      tmp_path: Path) -> None:
    python = pyspark_envs(PYSPARK, tmp_path, ("iceberg",))
    topic = new_topic(kafka, partitions=PARTITIONS)
    sent = produced(producer, topic)
    brokers = {"bootstrap.servers": kafka.bootstrap}

    # a partitioned table with the records' headers, in two batches (two snapshots)
    raw = LoadOptions(table="db.raw", kafka=brokers, topics=[topic], partition_by=["partition"],
                      include_headers=True, max_records=FIRST_BATCH)
    first, second = load(spark, raw, catalog), load(spark, raw, catalog)
    assert (first.batch, first.rows, second.batch, second.rows) == (0, FIRST_BATCH, 1, RECORDS - FIRST_BATCH)
    # the values parsed into a struct (nested struct, array, timestamp, double)
    parsed = load(spark, LoadOptions(table="db.parsed", kafka=brokers, topics=[topic], value_schema=VALUE_SCHEMA),
                  catalog)
    assert parsed.rows == RECORDS

    tables = {name: catalog.open().load_table(("db", name)) for name in ("raw", "parsed")}
    batch0 = next(s.snapshot_id for s in tables["raw"].snapshots()
                  if json.loads(s.summary.additional_properties["kafka-spark.sink.default"])["batch"] == 0)
    reads = [{"name": name, "metadata": t.metadata_location} for name, t in tables.items()]
    reads.append({"name": "raw-batch0", "metadata": tables["raw"].metadata_location, "snapshot_id": batch0})
    out = read_with_iceberg_spark(python, reads, tmp_path)
    assert out["spark"] == PYSPARK
    assert {name: out["reads"][name]["schema"] for name in SPARK_SCHEMAS} == SPARK_SCHEMAS
    assert out["reads"]["raw-batch0"]["schema"] == SPARK_SCHEMAS["raw"]

    # every row as pyiceberg reads it, at the current snapshot and at batch 0's
    by_spark = {read["name"]: arrow_rows(tmp_path / f"{read['name']}.arrow") for read in reads}
    assert by_spark["raw"] == ordered(tables["raw"].scan().to_arrow())
    assert by_spark["parsed"] == ordered(tables["parsed"].scan().to_arrow())
    assert by_spark["raw-batch0"] == ordered(tables["raw"].scan(snapshot_id=batch0).to_arrow())
    assert [len(by_spark[name]) for name in ("raw", "parsed", "raw-batch0")] == [RECORDS, RECORDS, FIRST_BATCH]

    # and as they were produced: every offset once, the same keys, values, timestamps and headers
    rows = by_spark["raw"]
    assert {r["topic"] for r in rows} == {topic}
    offsets = sorted((r["partition"], r["offset"]) for r in rows)
    assert offsets == sorted((p, o) for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS))
    assert Counter((r["partition"], r["key"], r["value"], r["timestamp"],
                    tuple((h["key"], h["value"]) for h in r["headers"])) for r in rows) == Counter(
        (p, k, v, t, tuple(h)) for p, k, v, t, h in sent)
    # batch 0 is the offsets below its ends, nothing of batch 1
    ends = {tp.partition: end for tp, end in first.offsets.items()}
    assert sorted((r["partition"], r["offset"]) for r in by_spark["raw-batch0"]) == sorted(
        (p, o) for p, end in ends.items() for o in range(end))
    values = {json.loads(r["value"])["n"]: r for r in rows}
    for r in by_spark["parsed"]:
        n = r["data"]["n"]
        assert r["offset"] == values[n]["offset"] and r["partition"] == values[n]["partition"]
        assert r["data"]["at"] == BASE + timedelta(seconds=n, microseconds=123_456 + n)
        assert r["data"]["who"] == {"name": f"user{n % 5}", "tags": ["t"] * (n % 3)}
        assert r["data"]["amount"] == n * 1.25

    # the snapshots' summaries, with the sink's record of each batch, as Iceberg's reader lists them
    for name, table in tables.items():
        snapshots = {s["snapshot_id"]: (s["parent_id"], s["operation"], s["summary"]) for s in out["snapshots"][name]}
        assert snapshots == pyiceberg_snapshots(table)
    commits = sorted((SinkCommit.from_json(s["summary"]["kafka-spark.sink.default"], "db.raw")
                      for s in out["snapshots"]["raw"]), key=lambda c: c.batch)
    assert [(c.batch, c.records, c.run_id, c.offsets) for c in commits] == [
        (0, FIRST_BATCH, first.run_id, first.offsets), (1, RECORDS - FIRST_BATCH, second.run_id, second.offsets)]
    assert second.offsets == {TopicPartition(topic, p): RECORDS // PARTITIONS for p in range(PARTITIONS)}
    assert {s["summary"]["kafka-spark.app-id"] for s in out["snapshots"]["raw"]} == {"kafka-spark/default"}
