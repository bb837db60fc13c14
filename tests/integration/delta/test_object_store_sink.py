"""The Kafka -> Delta job and stream on an s3a:// table (a local S3-compatible server): loads, resumes,
restarts, and `kafka-spark delta-offsets` reading the table without Spark."""

from __future__ import annotations

import json
import os

from delta_support import (
    JOBS,
    delta_offsets,
    latest,
    latest_offsets_of,
    produce,
    produce_numbered,
    run_available_now,
    run_job,
    summary,
)
from deltalake import DeltaTable

from kafka_spark.delta import committed_position
from kafka_spark.delta.location import path_location
from kafka_spark.delta.storage import delta_rs_location
from kafka_spark.sink import StreamOptions

JOB = JOBS / "kafka_to_delta.py"


def s3_rows(table: str, hadoop_conf: dict[str, str]) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of every row, read with delta-rs (not Spark)."""
    uri, options = delta_rs_location(table, hadoop_conf)
    rows = DeltaTable(uri, storage_options=options).to_pyarrow_table(columns=["topic", "partition", "offset"])
    return [(r["topic"], r["partition"], r["offset"]) for r in rows.to_pylist()]


def test_job_loads_an_s3a_table_resumes_and_delta_offsets_reads_it_without_spark(kafka, s3, topic_name):
    kafka.create_topic(topic_name, partitions=3)
    produce(kafka.bootstrap, topic_name, 2000)
    table = s3.url(f"jobs/{topic_name}")
    base = ["--bootstrap-servers", kafka.bootstrap, "--topics", topic_name, "--table", table,
            "--sink-id", "orders", "--json"]

    first = summary(run_job(JOB, *base, "--max-records", "1200", spark_conf=s3.spark_conf()))
    assert first["status"] == "committed" and first["batch"] == 0 and first["rows"] == 1200
    assert first["table"] == table
    produce(kafka.bootstrap, topic_name, 300, start=2000)
    rest = summary(run_job(JOB, *base, spark_conf=s3.spark_conf()))
    assert rest["status"] == "committed" and rest["batch"] == 1
    assert rest["start"] == first["offsets"] and rest["rows"] == 1100
    assert rest["offsets"] == latest(kafka.bootstrap, topic_name)

    keys = s3_rows(table, s3.hadoop_conf())
    assert len(keys) == len(set(keys)) == 2300
    # The kept offsets live on the store beside the table; no pending record is left behind.
    files = path_location(table, s3.hadoop_conf()).files
    assert files.list_files("_kafka_spark/offsets/orders") == ["0.json", "1.json"]
    assert files.list_files("_kafka_spark/offsets/orders/pending") == []

    # Without Spark, with the settings given to spark-submit, as they are.
    flags = [f"--conf=spark.hadoop.{k}={v}" for k, v in s3.hadoop_conf().items()]
    offline = delta_offsets(table, "--json", *flags)
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["orders"]["offsets"] == rest["offsets"]
    # Or with the AWS SDK's variables, S3A's addressing style given as a Hadoop key.
    env = {**os.environ, "AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
           "AWS_REGION": s3.region, "AWS_ENDPOINT_URL": s3.endpoint}
    lag = delta_offsets(table, "--conf", "fs.s3a.path.style.access=true", "-b", kafka.bootstrap, env=env)
    assert lag.returncode == 0, lag.stderr
    assert "sink orders: batch 1" in lag.stdout and "total lag: 0 records" in lag.stdout
    for proc in (offline, lag):
        assert s3.secret_key not in proc.stdout + proc.stderr

    # A catalog name needs Spark to be found: said so, not read as a relative directory.
    named = delta_offsets("lake.orders", *flags)
    assert named.returncode == 2
    assert "lake.orders is a catalog table name: finding its location needs Spark" in named.stderr


def test_stream_into_an_s3a_table_restarted_is_exact(spark_s3, s3, kafka, producer, topic_name):
    kafka.create_topic(topic_name, partitions=2)
    produce_numbered(producer, topic_name, 200)
    table = s3.url(f"streams/{topic_name}")
    options = StreamOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                            sink_id="stream", trigger="available-now", max_offsets_per_trigger=80)
    assert run_available_now(spark_s3, options) == 200
    assert options.checkpoint_location == f"{table}/_kafka_spark/checkpoints/stream"
    first = committed_position(table, "stream", spark_s3)
    assert first is not None and first.batch == 2  # 80 + 80 + 40

    produce_numbered(producer, topic_name, 70, start=200)
    assert run_available_now(spark_s3, options) == 70
    position = committed_position(table, "stream", s3.hadoop_conf())  # without Spark: delta-rs and pyarrow
    assert position is not None and position.batch == 3
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    assert position.offsets == ends
    keys = s3_rows(table, s3.hadoop_conf())
    assert len(keys) == len(set(keys))
    assert set(keys) == {(topic_name, tp.partition, o) for tp, end in ends.items() for o in range(end)}
