"""Delta tables on an S3-compatible server: Spark writes through s3a://, delta-rs reads the same table with
options derived from the SparkSession's Hadoop configuration, and the files kept beside the table are the
same through Hadoop's FileSystem and through pyarrow."""

from __future__ import annotations

import json
import urllib.request
import uuid

from deltalake import DeltaTable

from kafka_spark.delta.location import path_location
from kafka_spark.delta.storage import delta_rs_location
from kafka_spark.sink.table_files import ArrowFiles, HadoopFiles

SINK = "sink-s3"


def _write(spark, table: str, first: int, count: int, version: int, mode: str = "append") -> None:
    rows = spark.range(first, first + count).selectExpr("id", "concat('v', cast(id as string)) as value")
    meta = json.dumps({"sink": SINK, "batch": version, "end": first + count})
    (rows.write.format("delta").mode(mode).option("txnAppId", SINK).option("txnVersion", version)
     .option("userMetadata", meta).save(table))


def test_spark_writes_through_s3a_and_delta_rs_reads_with_derived_options(spark_s3, s3) -> None:
    name = f"tables/{uuid.uuid4().hex}"
    table = s3.url(name)
    _write(spark_s3, table, 0, 50, version=0, mode="errorifexists")
    _write(spark_s3, table, 50, 30, version=1)

    rows = sorted(tuple(r) for r in spark_s3.read.format("delta").load(table).collect())
    assert rows == [(n, f"v{n}") for n in range(80)]
    history = spark_s3.sql(f"DESCRIBE HISTORY delta.`{table}`").orderBy("version").collect()
    assert [h.version for h in history] == [0, 1]
    assert json.loads(history[-1].userMetadata) == {"sink": SINK, "batch": 1, "end": 80}

    uri, options = delta_rs_location(table, spark_s3)
    assert uri == s3.url(name, scheme="s3")
    assert options == {
        "AWS_ENDPOINT_URL": s3.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": s3.region,
        "AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    }
    dt = DeltaTable(uri, storage_options=options)
    assert dt.version() == 1
    assert dt.transaction_version(SINK) == 1
    arrow = dt.to_pyarrow_table().sort_by("id")
    assert arrow.column("id").to_pylist() == list(range(80))
    assert json.loads(dt.history(1)[0]["userMetadata"]) == {"sink": SINK, "batch": 1, "end": 80}


def test_s3a_renames_and_multipart_uploads(spark_s3, s3) -> None:
    # Renames are copies through the SDK's async (Netty) client, which runs on Spark's own Netty;
    # files over the multipart size go up in parts. Both are what an offsets file or a large
    # data file on S3 goes through.
    bucket = s3.create_bucket(f"parts-{uuid.uuid4().hex[:8]}")
    jvm = spark_s3._jvm
    hadoop = spark_s3.sparkContext._jsc.hadoopConfiguration()
    for key in ("multipart.size", "multipart.threshold"):
        hadoop.set(f"fs.s3a.bucket.{bucket}.{key}", "5M")
    path = jvm.org.apache.hadoop.fs.Path(f"s3a://{bucket}/kept/0.json.tmp")
    fs = path.getFileSystem(hadoop)
    out = fs.create(path, False)
    out.write(bytearray(b"x" * (6 << 20)))
    out.close()
    head = urllib.request.Request(f"{s3.endpoint}/{bucket}/kept/0.json.tmp", method="HEAD")
    with urllib.request.urlopen(head) as answer:
        assert "-" in answer.headers["ETag"]  # only a multipart upload's ETag has a part count

    final = jvm.org.apache.hadoop.fs.Path(f"s3a://{bucket}/kept/0.json")
    assert fs.rename(path, final)
    assert not fs.exists(path)
    assert fs.getFileStatus(final).getLen() == 6 << 20


def test_kept_files_written_through_hadoop_are_read_through_pyarrow_and_back(spark_s3, s3) -> None:
    table = s3.url(f"kept/{uuid.uuid4().hex}")
    hadoop = path_location(table, spark_s3).files
    arrow = path_location(table, s3.hadoop_conf()).files
    assert isinstance(hadoop, HadoopFiles) and isinstance(arrow, ArrowFiles)
    for files in (hadoop, arrow):
        assert files.read_text("_kafka_spark/offsets/s/0.json") is None
        assert files.list_dirs("_kafka_spark/offsets") == []
    hadoop.write_text("_kafka_spark/offsets/s/0.json", '{"batch":0}')
    hadoop.write_text("_kafka_spark/offsets/s/pending/1-r.json", "{}")
    arrow.write_text("_kafka_spark/offsets/t/pending/0-r.json", "{}")
    hadoop.write_text("_kafka_spark/offsets/s/0.json", '{"batch":0,"n":1}')
    for files in (hadoop, arrow):
        assert files.read_text("_kafka_spark/offsets/s/0.json") == '{"batch":0,"n":1}'
        assert files.list_dirs("_kafka_spark/offsets") == ["s", "t"]
        assert files.list_files("_kafka_spark/offsets/s") == ["0.json"]
    arrow.delete("_kafka_spark/offsets/s/pending/1-r.json")
    hadoop.delete("_kafka_spark/offsets/t/pending/0-r.json")
    hadoop.delete("_kafka_spark/offsets/t/pending/0-r.json")
    for files in (hadoop, arrow):
        assert files.list_files("_kafka_spark/offsets/s/pending") == []
        assert files.list_files("_kafka_spark/offsets/t/pending") == []
