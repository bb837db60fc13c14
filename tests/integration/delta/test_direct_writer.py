"""The direct writer: tasks write the Parquet files, delta-rs commits them with the sink's `txn` and JSON.

A table it writes reads the same with Delta on Spark and delta-rs, its statistics let Spark skip files, it
alternates with Spark's writer on one table with a continuous position, it refuses (or, with `auto`, leaves to
Spark's writer) the tables whose features it does not write, and a crash anywhere loses and duplicates nothing.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet
import pytest
from delta_support import ROW_COLUMNS, delta_rs_rows, files_scanned, latest_offsets_of, produce_numbered, spark_rows
from deltalake import DeltaTable

from kafka_spark.delta import committed_position, load
from kafka_spark.delta.writer_choice import direct_writer_reason
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions

KAFKA_COLUMNS = ("`key` BINARY, `value` BINARY, `topic` STRING, `partition` INT, `offset` BIGINT, "
                 "`timestamp` TIMESTAMP, `timestampType` INT")
COLUMNS = ROW_COLUMNS


def options(kafka, table: Path | str, topic: str, writer: str = "direct", **kw: Any) -> LoadOptions:
    return LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], writer=writer,
                       **kw)


def test_a_direct_table_reads_identically_with_spark_and_delta_rs_and_skips_files(kafka, spark, producer, topic_name,
                                                                                  tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    direct, reference = tmp_path / "direct", tmp_path / "spark"
    produce_numbered(producer, topic_name, 40)
    first = load(spark, options(kafka, direct, topic_name))
    assert (first.status, first.writer, first.batch, first.rows, first.table_version) == ("committed", "direct",
                                                                                          0, 40, 0)
    produce_numbered(producer, topic_name, 40, start=40)
    second = load(spark, options(kafka, direct, topic_name, writer="auto"))
    assert (second.writer, second.writer_reason, second.batch, second.rows) == ("direct", None, 1, 40)
    assert second.start == first.offsets and second.offsets == latest_offsets_of(kafka.bootstrap, topic_name)
    assert load(spark, options(kafka, direct, topic_name)).status == "up-to-date"
    assert load(spark, options(kafka, reference, topic_name, writer="spark")).rows == 80

    # The same rows and schema as Spark's writer gives, read by Delta on Spark and by delta-rs.
    assert spark_rows(spark, direct) == spark_rows(spark, reference) == delta_rs_rows(direct)
    assert len(spark_rows(spark, direct)) == 80
    read = spark.read.format("delta").load
    assert read(str(direct)).schema == read(str(reference)).schema
    assert DeltaTable(str(direct)).schema().to_json() == DeltaTable(str(reference)).schema().to_json()

    # The commit's metadata as Spark's writer records it, read back by both readers.
    history = spark.sql(f"DESCRIBE HISTORY delta.`{direct}`").orderBy("version").collect()
    assert [json.loads(h["userMetadata"])["batch"] for h in history] == [0, 1]
    assert history[1]["operationMetrics"]["numOutputRows"] == "40"
    assert history[1]["isBlindAppend"] is True and history[1]["readVersion"] == 0
    dt = DeltaTable(str(direct))
    assert dt.transaction_version("kafka-spark/default") == 1
    assert committed_position(str(direct), "default").offsets == second.offsets

    # Statistics: each partition's files of the first batch hold offsets below its second batch's.
    tail = max(first.offsets.values())
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    assert all(a["num_records"] > 0 and a["min.offset"] <= a["max.offset"] for a in adds)
    table = read(str(direct))
    # One file per partition and batch: the second batch's alone hold offsets from the first's end on.
    assert len(adds) == files_scanned(table) == 4
    assert files_scanned(table.where(f"`offset` >= {tail}")) == 2


def test_writers_alternate_on_one_table_with_a_continuous_position(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=3)
    table = tmp_path / "t"
    results = []
    for n, writer in enumerate(["spark", "direct", "spark", "direct"]):
        produce_numbered(producer, topic_name, 30, start=30 * n)
        results.append(load(spark, options(kafka, table, topic_name, writer=writer)))
    assert [(r.writer, r.batch, r.rows) for r in results] == [("spark", 0, 30), ("direct", 1, 30),
                                                             ("spark", 2, 30), ("direct", 3, 30)]
    assert all(b.start == a.offsets for a, b in itertools.pairwise(results))
    rows = spark_rows(spark, table)
    assert sorted((r[3], r[4]) for r in rows) == sorted(
        (tp.partition, o) for tp, end in latest_offsets_of(kafka.bootstrap, topic_name).items() for o in range(end))
    assert delta_rs_rows(table) == rows
    assert committed_position(str(table), "default").batch == 3

    # A run that planned batch 3 as well (and lost the race) writes nothing, as Delta skips it for Spark's writer.
    from kafka_spark.delta.batch_commit import commit_batch
    from kafka_spark.sink.errors import BatchAlreadyCommittedError
    from kafka_spark.sink.plan import BatchPlan

    stale = BatchPlan(3, start=dict(results[2].offsets), end=dict(results[3].offsets))
    with pytest.raises(BatchAlreadyCommittedError) as skipped:
        commit_batch(spark, options(kafka, table, topic_name), stale, "late-run")
    assert skipped.value.run_id == results[3].run_id
    assert spark_rows(spark, table) == rows and DeltaTable(str(table)).version() == 3


# Tables made by Delta on Spark with each feature: (columns, what follows USING delta, what the reason names;
# None where the direct writer serves the table).
WITH_ID = f"{KAFKA_COLUMNS}, `id` BIGINT GENERATED ALWAYS AS IDENTITY"
WITH_DAY = f"{KAFKA_COLUMNS}, `day` DATE GENERATED ALWAYS AS (CAST(`timestamp` AS DATE))"
NOT_NULL = KAFKA_COLUMNS.replace("`value` BINARY", "`value` BINARY NOT NULL")
OTHER = KAFKA_COLUMNS.replace("`value` BINARY", "`value` STRING")
FEATURE_TABLES = {
    "plain": (KAFKA_COLUMNS, "", None),
    "deletion-vectors": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.enableDeletionVectors'='true')", None),
    "change-data-feed": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.enableChangeDataFeed'='true')", None),
    "append-only": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.appendOnly'='true')", None),
    "column-mapping": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.columnMapping.mode'='name')", "column mapping"),
    "check": (KAFKA_COLUMNS, "", "CHECK constraint"),
    "generated": (WITH_DAY, "", "generated"),
    "identity": (WITH_ID, "", "identityColumns"),
    "row-tracking": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.enableRowTracking'='true')", "rowTracking"),
    "clustering": (KAFKA_COLUMNS, "CLUSTER BY (`partition`)", "clustering"),
    "type-widening": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.enableTypeWidening'='true')", "typeWidening"),
    "partitioned": (KAFKA_COLUMNS, "PARTITIONED BY (`partition`)", None),
    "in-commit-timestamps": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.enableInCommitTimestamps'='true')",
                             "inCommitTimestamp"),
    "v2-checkpoints": (KAFKA_COLUMNS, "TBLPROPERTIES ('delta.checkpointPolicy'='v2')", "v2Checkpoint"),
    "not-null": (NOT_NULL, "", "NOT NULL"),
    "other-columns": (OTHER, "", "columns differ"),
}


def test_direct_writer_reason_on_tables_made_by_delta_on_spark(kafka, spark, producer, topic_name, tmp_path):
    from kafka_spark.delta.writer_choice import rows_schema

    opts = options(kafka, tmp_path / "x", topic_name)
    rows = rows_schema(opts.source)
    for name, (columns, clause, expected) in FEATURE_TABLES.items():
        path = tmp_path / name
        spark.sql(f"CREATE TABLE delta.`{path}` ({columns}) USING delta {clause}")
        if name == "check":
            spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (`partition` >= 0)")
        reason = direct_writer_reason(DeltaTable(str(path)), opts, rows)
        if expected is None:
            assert reason is None, (name, reason)
        else:
            assert reason is not None and expected in reason, (name, reason)
    assert "catalog" in direct_writer_reason(None, options(kafka, "db.events", topic_name))
    assert "transform" in direct_writer_reason(None, options(kafka, tmp_path / "y", topic_name,
                                                             transform="SELECT * FROM kafka"))
    assert "value_schema" in direct_writer_reason(None, options(kafka, tmp_path / "y", topic_name,
                                                                value_schema="n INT"))
    assert "nested" in direct_writer_reason(None, options(kafka, tmp_path / "y", topic_name,
                                                          partition_by=["value.n"]), rows)
    assert direct_writer_reason(None, opts, rows) is None
    assert "spark.databricks.delta.properties.defaults.enableDeletionVectors" in direct_writer_reason(
        None, opts, rows, {"spark.databricks.delta.properties.defaults.enableDeletionVectors": "true"})

    # Through a load: 'direct' refuses with the reason, 'auto' uses Spark's writer and reports why.
    produce_numbered(producer, topic_name, 10)
    with pytest.raises(ConfigError, match="rowTracking"):
        load(spark, options(kafka, tmp_path / "row-tracking", topic_name))
    auto = load(spark, options(kafka, tmp_path / "row-tracking", topic_name, writer="auto"))
    assert (auto.writer, auto.rows) == ("spark", 10) and "rowTracking" in auto.writer_reason
    assert auto.summary()["writer_reason"] == auto.writer_reason
    dv = load(spark, options(kafka, tmp_path / "deletion-vectors", topic_name, writer="auto"))
    assert (dv.writer, dv.rows) == ("direct", 10)
    spark.sql(f"DELETE FROM delta.`{tmp_path / 'deletion-vectors'}` WHERE `offset` % 2 = 0")
    assert spark.read.format("delta").load(str(tmp_path / "deletion-vectors")).count() == 5
    # Delta on Spark marks statistics tight on a table with deletion vectors: so do the direct writer's files.
    log = (tmp_path / "deletion-vectors" / "_delta_log" / f"{dv.table_version:020d}.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in log if line.startswith('{"add"')]
    assert adds and all(json.loads(a["stats"])["tightBounds"] is True for a in adds)


def test_the_sessions_parquet_codec_is_the_direct_writers(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    produce_numbered(producer, topic_name, 20)
    codec = "spark.sql.parquet.compression.codec"
    spark.conf.set(codec, "zstd")
    try:
        zstd = load(spark, options(kafka, tmp_path / "zstd", topic_name))
        spark.conf.set(codec, "lz4")  # Hadoop's LZ4 framing: Spark's writer
        lz4 = load(spark, options(kafka, tmp_path / "lz4", topic_name, writer="auto"))
    finally:
        spark.conf.unset(codec)
    files = [a["path"] for a in pa.table(DeltaTable(str(tmp_path / "zstd")).get_add_actions(flatten=True)).to_pylist()]
    assert zstd.writer == "direct" and files and all(f.endswith(".zstd.parquet") for f in files)
    assert pa.parquet.ParquetFile(tmp_path / "zstd" / files[0]).metadata.row_group(0).column(0).compression == "ZSTD"
    assert spark_rows(spark, tmp_path / "zstd") == spark_rows(spark, tmp_path / "lz4")
    assert lz4.writer == "spark" and "spark.sql.parquet.compression.codec is lz4" in (lz4.writer_reason or "")


def test_direct_writer_on_an_s3_store_with_the_sessions_credentials(kafka, spark_s3, s3, producer, topic_name):
    import uuid

    kafka.create_topic(topic_name, partitions=2)
    table = s3.url(f"tables/{uuid.uuid4().hex}")
    produce_numbered(producer, topic_name, 30)
    first = load(spark_s3, options(kafka, table, topic_name))
    produce_numbered(producer, topic_name, 30, start=30)
    second = load(spark_s3, options(kafka, table, topic_name))
    assert [(r.writer, r.batch, r.rows) for r in (first, second)] == [("direct", 0, 30), ("direct", 1, 30)]
    rows = spark_s3.read.format("delta").load(table).select("partition", "offset").collect()
    assert sorted(map(tuple, rows)) == sorted(
        (tp.partition, o) for tp, end in latest_offsets_of(kafka.bootstrap, topic_name).items() for o in range(end))
    assert committed_position(table, "default", spark_s3).offsets == second.offsets
    # The store's secret travels to the tasks in its own option, which no plan shows.
    from kafka_spark.delta.direct_commit import direct_options, file_spec
    from kafka_spark.delta.location import locate
    from kafka_spark.delta.writer_choice import choose_writer

    target = choose_writer(spark_s3, options(kafka, table, topic_name), locate(table, spark_s3)).target
    secret = direct_options(file_spec(target))
    assert s3.secret_key in secret["directWriteSecret"] and s3.secret_key not in secret["directWriteTo"]
    df = (spark_s3.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
          .option("subscribe", topic_name).options(**secret).load())
    qe = df._jdf.queryExecution()
    assert not any(s3.secret_key in text for text in (qe.toString(), qe.logical().toString(),
                                                      qe.executedPlan().toString()))


@pytest.fixture(scope="module")
def registry() -> Iterator[Any]:
    """A Confluent-compatible schema registry on 127.0.0.1, for this module's tests."""
    from harness.schema_registry import RegistryServer

    with RegistryServer() as server:
        yield server


def test_avro_values_decoded_in_the_tasks_and_a_bad_record_refused(kafka, spark, registry, topic_name, tmp_path):
    from confluent_kafka.schema_registry import SchemaRegistryClient

    sys.path.insert(0, str(Path(__file__).parents[1] / "formats"))
    from registry_records import ORDER_V1, avro_serializer, order, produce, serialize

    from kafka_spark.sink import BadRecordError

    kafka.create_topic(topic_name)
    good = serialize(avro_serializer(SchemaRegistryClient({"url": registry.url}), ORDER_V1), topic_name,
                     [order(i) for i in range(8)])
    produce(kafka.bootstrap, topic_name, good[:6])
    direct, reference = tmp_path / "direct", tmp_path / "spark"
    decoding = {"value_format": "avro", "schema_registry": {"url": registry.url}}
    result = load(spark, options(kafka, direct, topic_name, **decoding))
    assert (result.writer, result.rows) == ("direct", 6)
    assert load(spark, options(kafka, reference, topic_name, writer="spark", **decoding)).rows == 6
    read = spark.read.format("delta").load
    assert read(str(direct)).schema == read(str(reference)).schema
    assert sorted(map(tuple, read(str(direct)).collect())) == sorted(map(tuple, read(str(reference)).collect()))

    produce(kafka.bootstrap, topic_name, [good[6], b"\x07junk", good[7]])
    with pytest.raises(BadRecordError) as failure:
        load(spark, options(kafka, direct, topic_name, **decoding))
    assert (failure.value.offset, failure.value.count) == (7, 1) and "magic byte 0x07" in failure.value.reason
    assert committed_position(str(direct), "default").batch == 0
    # A dead-letter table is Spark's writer's business for now: 'auto' hands the table over, with the reason.
    dead = load(spark, options(kafka, direct, topic_name, writer="auto", dead_letter=str(tmp_path / "dead"),
                               **decoding))
    assert (dead.writer, dead.rows, dead.dead_letters) == ("spark", 2, 1) and "dead-letter" in dead.writer_reason


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
