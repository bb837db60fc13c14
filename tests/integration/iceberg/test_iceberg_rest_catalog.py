"""Loads into Iceberg tables of a REST catalog (Apache Iceberg's REST catalog server, a JDBC catalog behind it)
whose files are on S3 (moto), read back by pyiceberg's scan through another REST client."""

from __future__ import annotations

import json

from iceberg_support import every_offset_once, new_topic, produce, summaries

from kafka_spark.iceberg import IcebergCatalog, committed_position, load
from kafka_spark.sink import LoadOptions


def loads_through_the_rest_catalog(kafka, spark, producer, s3, iceberg_rest, table: str, writer: str,
                                   served: str) -> None:
    secret = s3.secret_key
    props = iceberg_rest.client_properties()
    assert props["type"] == "rest" and props["s3.secret-access-key"] == secret
    catalog = IcebergCatalog(properties=props, name="rest")
    assert secret not in str(catalog) and secret not in repr(catalog)
    # another client of the same server: nothing of the writer's pyiceberg catalog (or its caches) is shared
    reader = IcebergCatalog(properties=dict(props), name="reader")

    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 150)
    opts = LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       partition_by=["partition"], writer=writer)
    first = load(spark, opts, catalog)
    assert (first.status, first.batch, first.rows, first.writer) == ("committed", 0, 150, served)
    # more records: the next run resumes from the table alone (its snapshots, through the REST catalog)
    produce(producer, topic, 60, start=150)
    second = load(spark, opts, catalog)
    assert (second.status, second.batch, second.rows) == ("committed", 1, 60)
    assert load(spark, opts, catalog).status == "up-to-date"
    for result in (first, second):
        shown = f"{result!r} {result.summary()}"
        assert secret not in shown, shown

    every_offset_once(reader, table, second.offsets)
    assert sum(second.offsets.values()) == 210
    found = summaries(reader, table)
    records = [json.loads(s["kafka-spark.sink.default"]) for s in found]
    assert [(r["batch"], r["records"], r["run"]) for r in records] == [
        (0, 150, first.run_id), (1, 60, second.run_id)]
    assert {s["kafka-spark.app-id"] for s in found} == {"kafka-spark/default"}
    assert committed_position(table, "default", reader).offsets == second.offsets

    # the table and its data files are on S3, where the server's catalog puts them
    iceberg = reader.open().load_table(reader.identifier(table))
    location = s3.url(f"iceberg-rest/{table.replace('.', '/')}", scheme="s3")
    assert iceberg.location() == location
    files = iceberg.inspect.files().column("file_path").to_pylist()
    assert files and all(f.startswith(f"{location}/data/partition=") for f in files), files

    # Another writer commits after the sink, then every snapshot but the current one is expired: no snapshot left
    # holds the sink's position, so the next run resumes from the record kept beside the table, on S3.
    other = reader.open().load_table(reader.identifier(table))
    other.append(other.scan(limit=1).to_arrow())
    other.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in other.snapshots()[:-1]]).commit()
    assert "kafka-spark.sink.default" not in summaries(reader, table)[-1]
    produce(producer, topic, 25, start=210)
    third = load(spark, opts, catalog)
    assert (third.status, third.batch, third.rows) == ("committed", 2, 25)
    assert third.start == second.offsets
    assert sum(third.offsets.values()) == 235


def test_pyiceberg_writer_loads_through_a_rest_catalog_with_the_files_on_s3(kafka, spark, producer, s3,
                                                                          iceberg_rest):
    loads_through_the_rest_catalog(kafka, spark, producer, s3, iceberg_rest, "db.events_pyiceberg", "pyiceberg",
                                   "pyiceberg")


def test_direct_writer_loads_through_a_rest_catalog_with_the_files_on_s3(kafka, spark, producer, s3, iceberg_rest):
    loads_through_the_rest_catalog(kafka, spark, producer, s3, iceberg_rest, "db.events", "auto", "direct")
