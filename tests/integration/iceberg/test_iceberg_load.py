"""Loads and streams into Iceberg tables of the embedded catalog, read back by pyiceberg's own scan."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest
from iceberg_support import every_offset_once, new_topic, produce, scanned, summaries

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.producer import Producer
from kafka_spark.errors import ConfigError
from kafka_spark.iceberg import committed_position, committed_positions, load, load_tables, start_stream
from kafka_spark.iceberg.batch_append import append_batch
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.sink import (
    BadRecordError,
    BatchAlreadyCommittedError,
    ConcurrentWriterError,
    LoadOptions,
    Routing,
    SinkCommit,
    StreamOptions,
)


@pytest.mark.parametrize(("writer", "served"), [("auto", "direct"), ("pyiceberg", "pyiceberg")])
def test_loads_resume_from_the_snapshots_alone(kafka, spark, producer, catalog, writer, served):
    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 150)
    opts = LoadOptions(table="db.events", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       max_records=100, partition_by=["partition"], writer=writer)
    first = load(spark, opts, catalog)
    assert (first.status, first.batch, first.rows, first.writer) == ("committed", 0, 100, served)
    second = load(spark, opts, catalog)
    assert (second.status, second.batch, second.rows) == ("committed", 1, 50)
    assert load(spark, opts, catalog).status == "up-to-date"
    every_offset_once(catalog, "db.events", second.offsets)

    # each snapshot's summary holds its batch's record, as Iceberg's Kafka Connect sink keeps its offsets
    records = [json.loads(s["kafka-spark.sink.default"]) for s in summaries(catalog, "db.events")]
    assert [(r["batch"], r["records"]) for r in records] == [(0, 100), (1, 50)]
    assert {s["kafka-spark.app-id"] for s in summaries(catalog, "db.events")} == {"kafka-spark/default"}
    assert committed_position("db.events", "default", catalog).offsets == second.offsets
    table = catalog.open().load_table(("db", "events"))
    assert [f.name for f in table.spec().fields] == ["partition"]

    # a partition added to the topic is read from its beginning
    kafka.tools.run("topics", "--alter", "--topic", topic, "--partitions", "3")
    produce(producer, topic, 50, start=150)
    with Producer({"bootstrap.servers": kafka.bootstrap}) as fresh:  # the other one's metadata knows 2 partitions
        for i in range(10):
            fresh.send(topic, f'{{"n":{200 + i}}}'.encode(), partition=2)
    third = load(spark, dataclasses.replace(opts, max_records=None), catalog)
    assert (third.batch, third.rows, len(third.offsets)) == (2, 60, 3)
    assert third.offsets[TopicPartition(topic, 2)] == 10
    every_offset_once(catalog, "db.events", third.offsets)

    # a re-run of a committed batch writes nothing; a batch planned from a position the sink has left is refused
    location = IcebergLocation(catalog, ("db", "events"))
    extra = pa.table({"topic": [topic], "partition": [0], "offset": [10_000]})
    rerun = SinkCommit("default", third.batch, dict(third.offsets), run_id="another-run")
    with pytest.raises(BatchAlreadyCommittedError, match=f"already committed .* by run {third.run_id}"):
        append_batch(location, extra, rerun)
    with pytest.raises(ConcurrentWriterError, match="planned batch"):
        append_batch(location, extra, dataclasses.replace(rerun, batch=third.batch + 2))
    every_offset_once(catalog, "db.events", third.offsets)
    # another sink may not load the same partitions into the table
    with pytest.raises(ConcurrentWriterError, match="already loaded"):
        load(spark, dataclasses.replace(opts, sink_id="other"), catalog)
    assert set(committed_positions("db.events", catalog)) == {"default"}

    # Another writer commits, then every snapshot but its own is expired (pyiceberg's expiry, through the SQL
    # catalog): no snapshot left names the sink, so the next load resumes from the record kept beside the table.
    other = catalog.open().load_table(("db", "events"))
    other.append(other.scan(limit=1).to_arrow())
    other.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in other.snapshots()[:-1]]).commit()
    assert "kafka-spark.sink.default" not in summaries(catalog, "db.events")[-1]
    produce(producer, topic, 20, start=210)
    fourth = load(spark, dataclasses.replace(opts, max_records=None), catalog)
    assert (fourth.status, fourth.batch, fourth.rows, fourth.start) == ("committed", 3, 20, third.offsets)


def test_values_parse_with_a_schema_and_a_bad_one_commits_nothing(kafka, spark, producer, catalog):
    topic = new_topic(kafka, partitions=1)
    produce(producer, topic, 5)
    opts = LoadOptions(table="db.parsed", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       value_schema="n INT", transform="SELECT offset, data.n AS n FROM kafka")
    assert load(spark, opts, catalog).rows == 5
    rows = catalog.open().load_table(("db", "parsed")).scan().to_arrow().to_pylist()
    assert sorted((r["offset"], r["n"]) for r in rows) == [(i, i) for i in range(5)]
    producer.send(topic, b"not json")
    producer.flush()
    with pytest.raises(BadRecordError, match="offset 5"):
        load(spark, opts, catalog)
    assert committed_position("db.parsed", "default", catalog).batch == 0


def test_a_routed_load_and_a_stream_continued_by_a_load(kafka, spark, producer, catalog):
    topics = [new_topic(kafka, partitions=1) for _ in range(2)]
    for topic in topics:
        produce(producer, topic, 20)
    routed = LoadOptions(kafka={"bootstrap.servers": kafka.bootstrap}, topics=topics,
                         routing=Routing(template="bronze.{topic}"))
    result = load_tables(spark, routed, catalog)
    assert sorted((r.table, r.status, r.rows) for r in result.tables) == sorted(
        (f"bronze.{t}", "committed", 20) for t in topics)
    for topic in topics:
        every_offset_once(catalog, f"bronze.{topic}", {TopicPartition(topic, 0): 20})

    # a stream of one table (AvailableNow), its checkpoint beside the table; then a load goes on from it
    stream = StreamOptions(table="db.streamed", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topics[0]])
    query = start_stream(spark, stream, catalog)
    try:
        assert query.awaitTermination(300)
    finally:
        query.stop()
    assert query.exception() is None
    assert stream.checkpoint is not None and "/db/streamed/_kafka_spark/checkpoints/" in stream.checkpoint
    streamed = committed_position("db.streamed", "default", catalog)
    assert streamed is not None and streamed.offsets == {TopicPartition(topics[0], 0): 20}
    produce(producer, topics[0], 7, start=20)
    more = load(spark, LoadOptions(table="db.streamed", kafka={"bootstrap.servers": kafka.bootstrap},
                                   topics=[topics[0]]), catalog)
    assert (more.batch, more.rows) == (streamed.batch + 1, 7)
    every_offset_once(catalog, "db.streamed", {TopicPartition(topics[0], 0): 27})
    assert len(scanned(catalog, "db.streamed")) == 27


def test_an_iceberg_commits_freshness_is_its_records_age(kafka, spark, producer, catalog):
    import time

    topic = new_topic(kafka, partitions=1)
    now = int(time.time() * 1000)
    for i in range(100):
        producer.send(topic, f"v{i}".encode(), timestamp_ms=now - (300_000 if i == 0 else 20_000))
    producer.flush()
    result = load(spark, LoadOptions(table="db.fresh", kafka={"bootstrap.servers": kafka.bootstrap},
                                     topics=[topic]), catalog)
    took = int(time.time() * 1000) - now
    fresh = result.freshness
    assert result.rows == 100 and fresh is not None
    assert 20_000 <= fresh.p50_ms <= 20_000 + took and 300_000 <= fresh.max_ms <= 300_000 + took


def test_both_writers_in_turn_make_one_table_and_direct_files_carry_the_schemas_field_ids(
        kafka, spark, producer, catalog):
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 60)
    base = LoadOptions(table="db.mixed", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], max_records=20,
                       include_headers=True, partition_by=["partition"])
    direct_files: set[str] = set()
    # one table created by pyiceberg's writer, one by the direct writer; each then written by the other in turn
    for table, writers in (("db.mixed", ["pyiceberg", "direct"]),
                           ("db.mixed_too", ["direct", "pyiceberg"])):
        for batch, writer in enumerate(writers):
            before = _data_files(catalog, table)
            result = load(spark, dataclasses.replace(base, table=table, writer=writer), catalog)
            assert (result.batch, result.rows, result.writer) == (batch, 20, writer)
            if writer == "direct":
                direct_files |= _data_files(catalog, table) - before
        every_offset_once(catalog, table, result.offsets)
        rows = catalog.open().load_table(catalog.identifier(table)).scan().to_arrow()
        assert rows.num_rows == 20 * len(writers) and rows.column("headers").null_count == 0

        # every direct-written file's columns, nested ones too, carry the table's field ids
        expected = _field_ids(schema_to_pyarrow(catalog.open().load_table(catalog.identifier(table)).schema(),
                                                include_field_ids=True))
        assert {"headers", "headers.element", "headers.element.key"} <= set(expected)
        mine = [f for f in direct_files if f"/{table.split('.')[1]}/data/" in f]
        assert mine and all("/data/partition=" in f for f in mine)
        for path in mine:
            assert _field_ids(pq.read_schema(path.removeprefix("file://"))) == expected, path


def test_day_and_bucket_partitions_written_by_both_writers(kafka, spark, producer, catalog):
    import time
    from datetime import date, datetime, timezone

    import pyarrow.parquet as pq
    from pyiceberg.expressions import GreaterThanOrEqual
    from pyiceberg.transforms import BucketTransform, DayTransform
    from pyiceberg.types import IntegerType, TimestamptzType

    topic = new_topic(kafka, partitions=3)
    day_ms, now = 86_400_000, int(time.time() * 1000)

    def send(start: int, n: int) -> None:  # records of today, yesterday and the day before, in turn
        for i in range(start, start + n):
            producer.send(topic, f"v{i}".encode(), key=str(i).encode(), timestamp_ms=now - (i % 3) * day_ms)
        producer.flush()

    send(0, 60)
    opts = LoadOptions(table="db.days", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       partition_by=["day(timestamp)", "bucket(4, partition)"])
    first = load(spark, opts, catalog)
    assert (first.rows, first.writer) == (60, "direct")
    send(60, 30)
    second = load(spark, dataclasses.replace(opts, writer="pyiceberg"), catalog)
    assert (second.batch, second.rows, second.writer) == (1, 30, "pyiceberg")
    every_offset_once(catalog, "db.days", second.offsets)

    table = catalog.open().load_table(("db", "days"))
    schema = table.schema()
    fields = [(f.field_id, f.name, f.transform, schema.find_column_name(f.source_id)) for f in table.spec().fields]
    assert fields == [(1000, "timestamp_day", DayTransform(), "timestamp"),
                      (1001, "partition_bucket", BucketTransform(4), "partition")]
    assert len(table.metadata.partition_specs) == 1
    # each data file's partition record is the day and bucket of every row in it, whichever writer wrote it
    day, bucket = DayTransform().transform(TimestamptzType()), BucketTransform(4).transform(IntegerType())
    files = list(table.scan().plan_files())
    found = set()
    for task in files:
        path = task.file.file_path
        rows = pq.read_table(path.removeprefix("file://"), columns=["partition", "timestamp"])
        micros = rows.column("timestamp").cast(pa.int64()).to_pylist()
        values = {(day(m), bucket(p)) for m, p in zip(micros, rows.column("partition").to_pylist(), strict=True)}
        stored = task.file.partition[0]
        record = ((stored - date(1970, 1, 1)).days if isinstance(stored, date) else stored, task.file.partition[1])
        assert values == {record}, (path, values, record)
        assert "/data/timestamp_day=" in path and "/partition_bucket=" in path, path
        found.add(record)
    assert len({d for d, _ in found}) == 3 and {b for _, b in found} <= set(range(4))
    assert {task.file.spec_id for task in files} == {0}

    # a row filter on the timestamp reads today's files alone
    midnight = datetime.fromtimestamp(now // day_ms * day_ms / 1000, tz=timezone.utc).isoformat()
    today = table.scan(row_filter=GreaterThanOrEqual("timestamp", midnight))
    assert 0 < len(list(today.plan_files())) < len(files)
    assert sorted(today.to_arrow().column("value").to_pylist()) == sorted(f"v{i}".encode() for i in range(0, 90, 3))

    # the table keeps its spec: another partition_by is refused, the same one (as Spark spells it) is taken
    with pytest.raises(ConfigError, match=r"differs from the partitioning of the existing table db.days "
                                          r"\(day\(timestamp\), bucket\(4, partition\)\)"):
        load(spark, dataclasses.replace(opts, partition_by=["partition"]), catalog)
    assert load(spark, dataclasses.replace(opts, partition_by=["days(timestamp)", "bucket(4,partition)"]),
                catalog).status == "up-to-date"

def _data_files(catalog, table: str) -> set[str]:
    if not catalog.open().table_exists(catalog.identifier(table)):
        return set()
    iceberg = catalog.open().load_table(catalog.identifier(table))
    return {task.file.file_path for task in iceberg.scan().plan_files()}


def _field_ids(schema: pa.Schema) -> dict[str, int]:
    """Each column's Parquet field id, by its path (`headers.element.key`)."""
    found: dict[str, int] = {}

    def walk(field: pa.Field, path: str) -> None:
        found[path] = int((field.metadata or {})[b"PARQUET:field_id"])
        kind = field.type
        if pa.types.is_struct(kind):
            for child in kind:
                walk(child, f"{path}.{child.name}")
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            walk(kind.value_field, f"{path}.element")
        elif pa.types.is_map(kind):
            walk(kind.key_field, f"{path}.key")
            walk(kind.item_field, f"{path}.value")

    for field in schema:
        walk(field, field.name)
    return found
