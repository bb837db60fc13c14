"""The direct writer on partitioned tables: the same directories, partition values, rows and pruning as Spark's.

Each table the direct writer partitions is compared with the same records written by Spark's writer (Delta on
Spark) and read back by Spark, by delta-rs and as a `pykafka` read of the records.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pytest
from delta_support import files_scanned, latest_offsets_of
from deltalake import DeltaTable

from kafka_spark.delta import committed_position, load
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
# Keys that need Spark's escaping in a directory name, and the two it makes null.
KEYS = [b"a/b", b"c:d%e=f g", None, b"", b"plain"]


def options(kafka, table: Path, topic: str, writer: str = "direct", **kw: Any) -> LoadOptions:
    return LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], writer=writer,
                       **kw)


def spark_rows(spark, table: Path) -> list[tuple]:
    return sorted(map(tuple, spark.read.format("delta").load(str(table)).select(*COLUMNS).collect()), key=repr)


def delta_rs_rows(table: Path) -> list[tuple]:
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=COLUMNS).to_pylist()
    # Spark's rows hold the session's (UTC) local time, delta-rs's the UTC instant.
    return sorted(((*(r[c] for c in COLUMNS[:5]), r["timestamp"].replace(tzinfo=None), r["timestampType"])
                   for r in rows), key=repr)


def kafka_rows(spark, kafka, topic: str) -> list[tuple]:
    df = (spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
          .load())
    return sorted(map(tuple, df.select(*COLUMNS).collect()), key=repr)


def directories(spark, table: Path, where: str = "true") -> Counter[str]:
    """The directory (relative to the table) of each row's file, as Spark's reader names it."""
    df = spark.read.format("delta").load(str(table)).where(where).selectExpr("input_file_name() AS f")
    return Counter(os.path.relpath(os.path.dirname(unquote(urlparse(r.f).path)), table) for r in df.collect())


def adds(table: Path) -> list[dict[str, Any]]:
    return pa.table(DeltaTable(str(table)).get_add_actions(flatten=True)).to_pylist()


def partition_records(table: Path, column: str) -> Counter[Any]:
    """The records of each partition value (as delta-rs reads the files' values from the log)."""
    found: Counter[Any] = Counter()
    for a in adds(table):
        found[a[f"partition.{column}"]] += a["num_records"]
    return found


def test_a_new_table_partitioned_by_partition_and_by_key_is_written_as_sparks_writer_writes_it(
        kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    for i in range(30):
        producer.send(topic_name, f'{{"n":{i}}}'.encode(), key=KEYS[i % len(KEYS)])
    producer.flush()
    records = kafka_rows(spark, kafka, topic_name)
    for column in ("partition", "key"):
        direct, reference = tmp_path / f"direct-{column}", tmp_path / f"spark-{column}"
        result = load(spark, options(kafka, direct, topic_name, partition_by=[column]))
        assert (result.writer, result.rows) == ("direct", 30)
        assert load(spark, options(kafka, reference, topic_name, writer="spark", partition_by=[column])).rows == 30

        # The rows: Spark, delta-rs and the records agree (an empty key, a partition value, reads back as null).
        rows = spark_rows(spark, direct)
        assert rows == spark_rows(spark, reference) == delta_rs_rows(direct)
        expected = [(r[0] or None, *r[1:]) if column == "key" else r for r in records]
        assert rows == sorted(expected, key=repr)
        # The table: its schema and partitioning, each file's partition values and records, each file's
        # directory, as Spark's writer made them for the same records.
        assert DeltaTable(str(direct)).schema().to_json() == DeltaTable(str(reference)).schema().to_json()
        assert DeltaTable(str(direct)).metadata().partition_columns == [column]
        assert partition_records(direct, column) == partition_records(reference, column)
        if column == "partition":  # one file per task and value (Spark's writer splits a null key from an empty one)
            assert len(adds(direct)) == len(adds(reference)) == 2
        assert directories(spark, direct) == directories(spark, reference)

    # Spark's escaping, and the null directory that both the null and the empty key share.
    assert set(directories(spark, tmp_path / "direct-key")) == {
        "key=a%2Fb", "key=c%3Ad%25e%3Df g", "key=__HIVE_DEFAULT_PARTITION__", "key=plain"}
    assert set(directories(spark, tmp_path / "direct-partition")) == {"partition=0", "partition=1"}
    # Partition columns are not in the files and have no statistics; the other columns have theirs.
    for add in adds(tmp_path / "direct-partition"):
        assert "min.partition" not in add and add["min.offset"] is not None

    # Pruning: a filter on the partition column reads only that partition's files.
    for column, value, where in [("partition", 1, "`partition` = 1"), ("key", b"a/b", "key = X'612F62'")]:
        table = spark.read.format("delta").load(str(tmp_path / f"direct-{column}")).where(where)
        files = adds(tmp_path / f"direct-{column}")
        matching = sum(a[f"partition.{column}"] == value for a in files)
        assert 0 < matching < len(files)
        assert files_scanned(table) == matching
        assert f"PartitionFilters: [isnotnull({column}" in table._jdf.queryExecution().executedPlan().toString()
        assert set(directories(spark, tmp_path / f"direct-{column}", where)) == {
            f"{column}=1" if column == "partition" else "key=a%2Fb"}


def test_an_existing_table_partitioned_by_sparks_writer_continues_with_the_direct_writer(
        kafka, spark, producer, topic_name, tmp_path):
    topic = f"{topic_name}.events-v1"  # '.' and '-' are kept as they are in a directory
    kafka.create_topic(topic, partitions=2)
    table = tmp_path / "t"
    results = []
    for n, (writer, partition_by) in enumerate([("spark", ["topic", "partition"]), ("direct", []),
                                                ("direct", ["topic", "partition"])]):
        for i in range(10 * n, 10 * n + 10):
            producer.send(topic, f'{{"n":{i}}}'.encode(), key=str(i).encode())
        producer.flush()
        results.append(load(spark, options(kafka, table, topic, writer=writer, partition_by=partition_by)))
    assert [(r.writer, r.batch, r.rows) for r in results] == [("spark", 0, 10), ("direct", 1, 10), ("direct", 2, 10)]
    assert results[1].start == results[0].offsets and results[2].start == results[1].offsets
    assert committed_position(str(table), "default").offsets == latest_offsets_of(kafka.bootstrap, topic)

    rows = spark_rows(spark, table)
    assert rows == delta_rs_rows(table) == kafka_rows(spark, kafka, topic)
    # Every file of each writer in the directory of its topic and partition, with those partition values.
    assert set(directories(spark, table)) == {f"topic={topic}/partition=0", f"topic={topic}/partition=1"}
    values = Counter((a["partition.topic"], a["partition.partition"]) for a in adds(table))
    assert set(values) == {(topic, 0), (topic, 1)} and sum(values.values()) == len(adds(table))
    only = spark.read.format("delta").load(str(table)).where("`partition` = 0")
    assert files_scanned(only) == values[(topic, 0)] and {r[3] for r in only.select(*COLUMNS).collect()} == {0}

    # A partitioning other than the table's, or a generated partition column, is Spark's writer's (named).
    producer.send(topic, b'{"n":30}', key=b"30")
    producer.flush()
    with pytest.raises(ConfigError, match=r"partition_by \(partition\) differs from the table's partitioning "
                                          r"\(topic, partition\)"):
        load(spark, options(kafka, table, topic, partition_by=["partition"]))
    generated = tmp_path / "generated"
    spark.sql(f"CREATE TABLE delta.`{generated}` (`key` BINARY, `value` BINARY, `topic` STRING, `partition` INT, "
              "`offset` BIGINT, `timestamp` TIMESTAMP, `timestampType` INT, "
              "`day` DATE GENERATED ALWAYS AS (CAST(`timestamp` AS DATE))) USING delta PARTITIONED BY (`day`)")
    auto = load(spark, options(kafka, generated, topic, writer="auto"))
    assert (auto.writer, auto.rows) == ("spark", 31) and "column day is generated" in auto.writer_reason


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
