"""Spark's Iceberg writer (iceberg-spark-runtime-4.1 1.12.0 under PySpark 4.1, the package from the repository)
as the sink's writer: asked for (`writer="spark"`) and taken by `auto` for a table whose files are ORC, exactly
once through a run stopped after Spark's write to its staging branch (SIGKILLed there on the long schedule,
`KAFKA_SPARK_KILLS=10`), the tables read back with pyiceberg.

Where the session has no Iceberg runtime (this repository's Spark), asking for it, or loading an ORC table, is
refused with the reason; the catalog's Spark properties are derived without a JVM.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from harness.fetch import ensure
from iceberg_support import new_topic, produce
from wheel_build import REPO

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg import IcebergCatalog, load
from kafka_spark.iceberg.spark_append import RUNTIME_MISSING, STAGE_PREFIX, spark_properties
from kafka_spark.sink import LoadOptions

WRITER = Path(__file__).parent / "spark_iceberg_write.py"
PYSPARK = "4.1.4"  # the newest Spark that Iceberg 1.12 has a runtime for
RECORDS, CAP = 240, 100
# The long schedule (KAFKA_SPARK_KILLS=10) kills the process after Spark's write; the suite stops it there.
KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "2"))


def run_phase(python: Path, spec: Path, phase: str, cwd: Path) -> tuple[int, list[dict]]:
    """Run the writer script's `phase` in the PySpark 4.1 environment; its exit code and its loads' summaries."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "KAFKA_SPARK_CRASH_AT")}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python), PYTHONPATH=str(REPO))
    proc = subprocess.run([str(python), str(WRITER), str(spec), phase], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    loads = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"load"')]
    (cwd / f"{phase}.err").write_text(proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if "Error" in line or "Exception" in line]
    assert proc.returncode in (0, -9), "\n".join(errors[:12]) or proc.stderr[-4000:]
    return proc.returncode, loads


@pytest.mark.timeout(1800)  # a cold machine builds the PySpark 4.1 environment (and PySpark's wheel) once
def test_sparks_iceberg_writer_loads_exactly_once_and_serves_orc_tables(kafka, producer, pyspark_envs,
                                                                        tmp_path: Path) -> None:
    python = pyspark_envs(PYSPARK, tmp_path, ("iceberg",))
    topic = new_topic(kafka, partitions=3)
    produce(producer, topic, RECORDS)
    jars = sorted(str(p) for p in ensure("iceberg").glob("*.jar"))
    warehouse = tmp_path / "warehouse"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"jars": jars, "bootstrap": kafka.bootstrap, "topic": topic,
                                "warehouse": str(warehouse), "cap": CAP}))

    if KILLS > 2:
        code, crashed = run_phase(python, spec, "crash", tmp_path)
        assert code == -9 and [r["load"] for r in crashed] == ["first"], crashed
        code, loads = run_phase(python, spec, "resume", tmp_path)
        loads = crashed + loads
    else:  # the suite stops the run at the same point in process (spark_iceberg_write.py)
        code, loads = run_phase(python, spec, "all", tmp_path)
        assert "stopped before the commit" in next(r["error"] for r in loads if r["load"] == "stopped")
    assert code == 0
    by = {r["load"]: r for r in loads}
    assert (by["first"]["batch"], by["first"]["rows"], by["first"]["writer"]) == (0, CAP, "spark"), by["first"]
    # The killed run's batch was never on the main branch: the next run loads it, once, then the rest.
    assert (by["resumed"]["batch"], by["resumed"]["rows"]) == (1, CAP)
    assert (by["rest"]["batch"], by["rest"]["rows"]) == (2, RECORDS - 2 * CAP)
    assert by["orc-first"]["writer"] == "spark" and "orc" in by["orc-first"]["writer_reason"], by["orc-first"]
    assert (by["orc-first"]["rows"], by["orc-rest"]["rows"], by["orc-rest"]["batch"]) == (CAP, RECORDS - CAP, 1)

    catalog = IcebergCatalog(warehouse=str(warehouse)).open()
    for name in ("forced", "orc"):
        table = catalog.load_table(("db", name))
        rows = table.scan(selected_fields=("partition", "offset", "value")).to_arrow().to_pylist()
        counts = Counter((r["partition"], r["offset"]) for r in rows)
        assert max(counts.values()) == 1, f"{name}: a record was written twice"
        assert len(counts) == RECORDS and sorted(json.loads(r["value"])["n"] for r in rows) == list(range(RECORDS))
        # Each batch is one snapshot of the main branch with the sink's record; no staging branch is left.
        records = [json.loads(s.summary.additional_properties["kafka-spark.sink.spark-writer"])
                   for s in table.snapshots() if "kafka-spark.sink.spark-writer" in s.summary.additional_properties]
        main = {s.snapshot_id for s in _ancestry(table)}
        assert [r["batch"] for r in records if r] == list(range(len(records)))
        assert {r["batch"] for r in records} == set(range(3 if name == "forced" else 2))
        assert all(s.snapshot_id in main for s in table.snapshots()
                   if "kafka-spark.sink.spark-writer" in s.summary.additional_properties)
        assert not [ref for ref in table.metadata.refs if ref.startswith(STAGE_PREFIX)], table.metadata.refs
        kinds = {task.file.file_format.value.lower() for task in table.scan().plan_files()}
        assert kinds == ({"orc"} if name == "orc" else {"parquet"}), kinds


def _ancestry(table):
    snapshot = table.current_snapshot()
    while snapshot is not None:
        yield snapshot
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None


def test_without_icebergs_runtime_spark_writer_and_orc_tables_are_refused(kafka, spark, producer, catalog) -> None:
    topic = new_topic(kafka, partitions=1)
    produce(producer, topic, 5)
    options = LoadOptions(table="db.asked", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                          writer="spark")
    with pytest.raises(ConfigError) as asked:
        load(spark, options, catalog)
    assert RUNTIME_MISSING in str(asked.value)
    # An ORC table (made with pyiceberg, as another engine would): `auto` names the files and what it would take.
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    opened = catalog.open()
    opened.create_namespace_if_not_exists("db")
    opened.create_table(("db", "orc"), Schema(NestedField(1, "offset", LongType(), required=False)),
                        properties={"write.format.default": "orc"})
    with pytest.raises(ConfigError) as orc:
        load(spark, LoadOptions(table="db.orc", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic]),
             catalog)
    assert "the table's files are orc" in str(orc.value) and RUNTIME_MISSING in str(orc.value), orc.value
    assert opened.load_table(("db", "orc")).current_snapshot() is None  # nothing committed


def test_the_catalogs_spark_properties(tmp_path: Path) -> None:
    embedded = spark_properties(IcebergCatalog(warehouse=str(tmp_path / "w")))
    assert embedded == {"": "org.apache.iceberg.spark.SparkCatalog", "cache-enabled": "false", "type": "jdbc",
                        "uri": f"jdbc:sqlite:{tmp_path / 'w' / 'catalog.db'}", "warehouse": str(tmp_path / "w")}
    rest = spark_properties(IcebergCatalog(uri="http://127.0.0.1:8181", properties={
        "type": "rest", "s3.endpoint": "http://127.0.0.1:9000"}))
    assert rest == {"": "org.apache.iceberg.spark.SparkCatalog", "cache-enabled": "false", "type": "rest", "uri": "http://127.0.0.1:8181",
                    "s3.endpoint": "http://127.0.0.1:9000"}
    # Credentials would show in Spark's configuration (its UI, its event logs): the user registers such a catalog.
    for secret in ({"type": "rest", "credential": "id:very-secret"}, {"type": "rest", "token": "very-secret"},
                   {"type": "sql", "uri": "postgresql+psycopg://u:very-secret@127.0.0.1/db"}):
        with pytest.raises(ConfigError) as refused:
            spark_properties(IcebergCatalog(properties=secret))
        assert "very-secret" not in str(refused.value) and "spark.sql.catalog.kafka_spark" in str(refused.value)
    with pytest.raises(ConfigError, match="type glue"):
        spark_properties(IcebergCatalog(properties={"type": "glue"}))
