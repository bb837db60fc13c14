"""Loads into Iceberg tables of the catalogs other than the embedded one and REST: a Hive metastore (Apache Hive's
standalone metastore) and AWS Glue's API (moto's, beside its S3), each run exactly once across runs, read back by
another pyiceberg client of the same catalog."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from iceberg_support import every_offset_once, new_topic, produce, summaries

from kafka_spark.iceberg import IcebergCatalog, committed_position, load, start_stream
from kafka_spark.sink import LoadOptions, StreamOptions

SESSION_TOKEN = "kafka-spark-local-session-token"


@pytest.fixture(scope="module")
def hive_metastore(tmp_path_factory):
    """Apache Hive's standalone metastore (tests/harness/hive_metastore.py): Derby, a local warehouse."""
    from harness.hive_metastore import start_hive_metastore

    server = start_hive_metastore(tmp_path_factory.mktemp("hive-metastore"))
    yield server
    server.stop()


def listening_addresses(pid: int) -> list[str]:
    """The local addresses of process `pid`'s listening TCP and UDP sockets, as `ss` shows them."""
    shown = subprocess.run(["ss", "-H", "-lntup"], capture_output=True, text=True, check=True).stdout
    return [line.split()[4] for line in shown.splitlines() if f"pid={pid}," in line]


def two_loads(kafka, spark, producer, catalog: IcebergCatalog, table: str, writer: str, served: str):
    """Two loads of one topic, the second resuming from the table alone, then nothing left; both results."""
    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 40)
    opts = LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], writer=writer)
    first = load(spark, opts, catalog)
    assert (first.status, first.batch, first.rows, first.writer) == ("committed", 0, 40, served)
    produce(producer, topic, 15, start=40)
    second = load(spark, opts, catalog)
    assert (second.status, second.batch, second.rows) == ("committed", 1, 15)
    assert load(spark, opts, catalog).status == "up-to-date"
    return topic, opts, first, second


def test_loads_and_a_stream_into_a_hive_metastore_table_exactly_once(kafka, spark, producer, hive_metastore,
                                                                    tmp_path):
    # the metastore listens on the loopback address alone (its thrift port, and nothing else)
    assert hive_metastore.process is not None and hive_metastore.process.pid is not None
    addresses = listening_addresses(hive_metastore.process.pid)
    assert addresses and all(a.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]") for a in addresses), addresses

    props = hive_metastore.client_properties()
    catalog = IcebergCatalog(properties=props, name="hive")
    reader = IcebergCatalog(properties=dict(props), name="reader")
    table = "hive_db.events"
    topic, _, first, second = two_loads(kafka, spark, producer, catalog, table, "auto", "direct")

    # a stream goes on from the loads' position, through the same metastore
    produce(producer, topic, 10, start=55)
    stream = StreamOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                           checkpoint=str(tmp_path / "checkpoint"))
    query = start_stream(spark, stream, catalog)
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert query.exception() is None

    position = committed_position(table, "default", reader)
    assert sum(position.offsets.values()) == 65
    every_offset_once(reader, table, position.offsets)
    batches = [s["kafka-spark.sink.default"] for s in summaries(reader, table)]
    assert len(batches) == 3 and first.run_id in batches[0] and second.run_id in batches[1]

    # the metastore's table: in its warehouse, pointing at the table's current metadata
    iceberg = reader.open().load_table(reader.identifier(table))
    assert iceberg.location().startswith("file:" + str(hive_metastore.warehouse)), iceberg.location()
    files = iceberg.inspect.files().column("file_path").to_pylist()
    assert files and all(f.startswith(f"{iceberg.location()}/data/") for f in files), files


def test_loads_into_a_glue_table_exactly_once_with_no_credential_shown(kafka, spark, producer, s3):
    import boto3

    namespace = f"glue_{uuid.uuid4().hex[:8]}"
    table = f"{namespace}.events"
    props = {
        "type": "glue",
        "glue.endpoint": s3.endpoint,
        "glue.region": s3.region,
        "glue.access-key-id": s3.access_key,
        "glue.secret-access-key": s3.secret_key,
        "glue.session-token": SESSION_TOKEN,
        "warehouse": s3.url("glue", scheme="s3"),
        "s3.endpoint": s3.endpoint,
        "s3.access-key-id": s3.access_key,
        "s3.secret-access-key": s3.secret_key,
        "s3.region": s3.region,
    }
    catalog = IcebergCatalog(properties=props, name="glue")
    reader = IcebergCatalog(properties=dict(props), name="reader")
    secrets = (s3.secret_key, SESSION_TOKEN, s3.access_key)
    shown = f"{catalog!r} {catalog}"
    assert not [s for s in secrets if s in shown], shown

    _, _, first, second = two_loads(kafka, spark, producer, catalog, table, "pyiceberg", "pyiceberg")
    for result in (first, second):
        text = f"{result!r} {result.summary()}"
        assert not [s for s in secrets if s in text], text
    every_offset_once(reader, table, second.offsets)
    assert committed_position(table, "default", reader).offsets == second.offsets

    # what Glue holds, asked through AWS's own client: an Iceberg table whose metadata is the current one, on S3
    iceberg = reader.open().load_table(reader.identifier(table))
    glue = boto3.client("glue", endpoint_url=s3.endpoint, region_name=s3.region, aws_access_key_id=s3.access_key,
                        aws_secret_access_key=s3.secret_key)
    entry = glue.get_table(DatabaseName=namespace, Name="events")["Table"]
    assert entry["TableType"] == "EXTERNAL_TABLE"
    assert entry["Parameters"]["table_type"].upper() == "ICEBERG"
    assert entry["Parameters"]["metadata_location"] == iceberg.metadata_location
    assert iceberg.metadata_location.startswith(s3.url(f"glue/{namespace}.db/events/metadata/", scheme="s3"))
