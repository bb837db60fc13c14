"""Resume stays exact whatever Delta table features the table uses and whatever maintenance other jobs run
between loads, with the old commits removed as log cleanup would; delta-rs reads the result independently."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow as pa
import pytest
from delta_support import latest_offsets_of, produce_numbered
from deltalake import DeltaTable

from kafka_spark.delta import committed_position, load
from kafka_spark.delta.position import offsets_dir
from kafka_spark.sink import LoadOptions

KAFKA_COLUMNS = ("`key` BINARY, `value` BINARY, `topic` STRING, `partition` INT, `offset` BIGINT, "
                 "`timestamp` TIMESTAMP, `timestampType` INT")
V2_CHECKPOINT = re.compile(r"^\d{20}\.checkpoint\.[0-9a-f-]{36}\.(json|parquet)$")
MULTI_PART_CHECKPOINT = re.compile(r"^\d{20}\.checkpoint\.\d{10}\.\d{10}\.parquet$")


def options(kafka, table: Path, topic: str, **kw) -> LoadOptions:
    return LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], **kw)


@contextlib.contextmanager
def spark_conf(spark, settings: Mapping[str, str]) -> Iterator[None]:
    """Spark settings for the block only: one SparkSession serves every test of the run."""
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)


def force_log_cleanup(table: Path) -> int:
    """Remove what Delta's log cleanup removes once retention has passed: the commits and checkpoints older
    than the newest checkpoint (with their checksum files). Returns that checkpoint's version."""
    log = table / "_delta_log"
    newest = max(int(p.name[:20]) for p in log.iterdir() if ".checkpoint." in p.name and p.name[:20].isdigit())
    for p in log.iterdir():
        name = p.name.removeprefix(".")
        if p.is_file() and name[:20].isdigit() and int(name[:20]) < newest:
            p.unlink()
    return newest


def scan(table: Path, columns: list[str], predicate: str | None = None) -> pa.Table:
    """The table's rows as delta-rs reads them (deletion vectors applied, column mapping resolved)."""
    return pa.table(DeltaTable(str(table)).scan(columns=columns, predicate=predicate))


def assert_exactly_produced(kafka, table: Path, topic: str) -> None:
    """Every produced offset of `topic` is in the table once."""
    rows = scan(table, ["partition", "offset"], f"topic = '{topic}'").to_pylist()
    loaded = sorted((r["partition"], r["offset"]) for r in rows)
    produced = sorted((tp.partition, o) for tp, end in latest_offsets_of(kafka.bootstrap, topic).items()
                      for o in range(end))
    assert loaded == produced


LONG = pytest.mark.skipif(int(os.environ.get("KAFKA_SPARK_KILLS", "2")) <= 2, reason="long: KAFKA_SPARK_KILLS=10")

# Every feature at once (Spark's writer serves such a table), and the features the direct writer honours.
FEATURES = {
    "spark": ("CLUSTER BY (`partition`) TBLPROPERTIES ('delta.checkpointPolicy'='v2', 'delta.checkpointInterval'='2', "
              "'delta.enableDeletionVectors'='true', 'delta.columnMapping.mode'='name', "
              "'delta.enableInCommitTimestamps'='true', 'delta.enableRowTracking'='true')",
              ({"v2Checkpoint", "deletionVectors", "columnMapping"},
               {"inCommitTimestamp", "rowTracking", "clustering", "domainMetadata"})),
    "direct": ("TBLPROPERTIES ('delta.checkpointInterval'='2', 'delta.enableDeletionVectors'='true', "
               "'delta.enableChangeDataFeed'='true')",
               ({"deletionVectors"}, {"deletionVectors", "changeDataFeed"})),
}


# Spark's writer on every feature at once runs in the long schedule only (KAFKA_SPARK_KILLS=10); the suite keeps
# the direct writer's features and the checkpoint test below, on Spark's writer.
@pytest.mark.parametrize("writer", [pytest.param("spark", marks=LONG), "direct"])
def test_every_table_feature_and_maintenance_by_other_jobs_keep_resume_exact(kafka, spark, producer, topic_name,
                                                                            tmp_path, writer):
    kafka.create_topic(topic_name, partitions=2)
    table = tmp_path / "t"
    clause, (reader_features, writer_features) = FEATURES[writer]
    spark.sql(f"CREATE TABLE delta.`{table}` ({KAFKA_COLUMNS}) USING delta {clause}")
    opts = options(kafka, table, topic_name)
    produce_numbered(producer, topic_name, 30)
    first = load(spark, opts)
    assert first.batch == 0 and first.rows == 30 and first.writer == writer
    # Another job: rows of its own, half of them deleted (deletion vectors), and a MERGE that rewrites
    # some of ours; then OPTIMIZE (clustering) and VACUUM of every file no longer referenced.
    t = f"delta.`{table}`"
    spark.sql(f"INSERT INTO {t} SELECT NULL, CAST('x' AS BINARY), 'other-job', 0, id, current_timestamp(), 0 "
              "FROM range(10)")
    spark.sql(f"DELETE FROM {t} WHERE topic = 'other-job' AND `offset` % 2 = 0")
    spark.sql(f"MERGE INTO {t} AS d USING (SELECT `partition`, `offset` FROM {t} WHERE topic = '{topic_name}' "
              f"AND `offset` % 3 = 0) AS s ON d.topic = '{topic_name}' AND d.`partition` = s.`partition` "
              "AND d.`offset` = s.`offset` WHEN MATCHED THEN UPDATE SET value = CAST('merged' AS BINARY)")
    spark.sql(f"OPTIMIZE {t}")
    # VACUUM lists the table in as many tasks as this parallelism (10,000 by default): minutes on 2 cores,
    # seconds with 2.
    with spark_conf(spark, {"spark.databricks.delta.retentionDurationCheck.enabled": "false",
                            "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2"}):
        spark.sql(f"VACUUM {t} RETAIN 0 HOURS")
    produce_numbered(producer, topic_name, 30, start=30)
    assert force_log_cleanup(table) > first.table_version
    assert not (table / "_delta_log" / f"{first.table_version:020d}.json").exists()
    if writer == "spark":
        assert any(V2_CHECKPOINT.match(p.name) for p in (table / "_delta_log").iterdir())

    second = load(spark, opts)
    assert second.batch == 1 and second.rows == 30 and second.start == first.offsets and second.writer == writer
    assert_exactly_produced(kafka, table, topic_name)
    dt = DeltaTable(str(table))
    assert dt.transaction_version("kafka-spark/default") == 1
    protocol = dt.protocol()
    assert reader_features <= set(protocol.reader_features or [])
    assert writer_features <= set(protocol.writer_features or [])
    assert scan(table, ["offset"], "topic = 'other-job'").num_rows == 5
    # Spark reads what either writer appended after the other jobs' maintenance, deletion vectors applied.
    assert spark.read.format("delta").load(str(table)).where(f"topic = '{topic_name}'").count() == 60

    # Without its kept offsets file, the last batch's offsets come from its commit's userMetadata.
    (offsets_dir(table, "default") / "1.json").unlink()
    assert committed_position(str(table), "default").offsets == second.offsets
    assert (offsets_dir(table, "default") / "1.json").exists()
    assert load(spark, opts).status == "up-to-date"


def test_multi_part_checkpoints_and_a_transform_that_adds_a_column(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    table = tmp_path / "t"
    opts = options(kafka, table, topic_name)
    produce_numbered(producer, topic_name, 20)
    with spark_conf(spark, {"spark.databricks.delta.checkpoint.partSize": "2"}):
        assert load(spark, opts).rows == 20
        spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.checkpointInterval'='2')")
        produce_numbered(producer, topic_name, 20, start=20)
        opts.transform = "SELECT *, length(value) AS value_length FROM kafka"
        with pytest.raises(Exception, match=r"(?i)schema mismatch"):
            load(spark, opts)
        opts.merge_schema = True
        assert load(spark, opts).rows == 20
    assert any(MULTI_PART_CHECKPOINT.match(p.name) for p in (table / "_delta_log").iterdir())
    force_log_cleanup(table)
    produce_numbered(producer, topic_name, 20, start=40)
    third = load(spark, opts)
    assert third.batch == 2 and third.rows == 20
    assert_exactly_produced(kafka, table, topic_name)
    lengths = scan(table, ["value_length"]).column("value_length").to_pylist()
    assert lengths.count(None) == 20 and len(lengths) == 60
