"""The sink's core runs loads and streams on a table format that is not Delta (tests' ParquetLogFormat)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from parquet_log_format import ParquetLogFormat, commits

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.sink import ConcurrentWriterError, LoadOptions, Routing, StreamOptions
from kafka_spark.sink.load import load_table, load_tables
from kafka_spark.sink.stream import start_stream

FORMAT = ParquetLogFormat()


def produce(producer, topic: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        producer.send(topic, f'{{"n":{i}}}'.encode(), key=str(i % 5).encode())
    producer.flush()


def loaded(spark, table: Path) -> list[tuple[str, int, int]]:
    rows = (spark.read.option("recursiveFileLookup", "true").parquet(str(table / "data"))
            .select("topic", "partition", "offset").collect())
    return sorted((r["topic"], r["partition"], r["offset"]) for r in rows)


def test_loads_resume_from_the_format_alone_and_refuse_a_shared_partition(kafka, spark, producer, tmp_path):
    topic = f"fmt-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, partitions=2)
    produce(producer, topic, 150)
    table = tmp_path / "t"
    opts = LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       max_records=100)
    first = load_table(spark, opts, FORMAT)
    assert (first.status, first.batch, first.rows) == ("committed", 0, 100)
    second = load_table(spark, opts, FORMAT)
    assert (second.status, second.batch, second.rows) == ("committed", 1, 50)
    assert load_table(spark, opts, FORMAT).status == "up-to-date"
    # every offset once, in exactly two commits of the format's own log
    assert [t[1:] for t in loaded(spark, table)] == sorted(
        (p, o) for p, n in ((tp.partition, off) for tp, off in second.offsets.items()) for o in range(n))
    assert [c["data"] for c in commits(table)] == ["0-default", "1-default"]
    other = LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], sink_id="b")
    with pytest.raises(ConcurrentWriterError, match="already loaded into this table by sink 'default'"):
        load_table(spark, other, FORMAT)


def test_a_routed_load_and_a_stream_of_one_table_on_the_same_format(kafka, spark, producer, tmp_path):
    topics = [f"fmt-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for topic in topics:
        kafka.create_topic(topic, partitions=1)
        produce(producer, topic, 30)
    routed = LoadOptions(kafka={"bootstrap.servers": kafka.bootstrap}, topics=topics,
                         routing=Routing(template=str(tmp_path / "bronze" / "{topic}")))
    result = load_tables(spark, routed, FORMAT)
    assert sorted((Path(r.table).name, r.rows) for r in result.tables) == sorted((t, 30) for t in topics)
    # one table of both topics, streamed: the same records, each once, then only what is new
    table = tmp_path / "both"
    stream = StreamOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=topics)
    for more in (0, 10):
        produce(producer, topics[0], more, start=30)
        query = start_stream(spark, stream, FORMAT)
        try:
            assert query.awaitTermination(300)
        finally:
            query.stop()
        assert query.exception() is None
    rows = loaded(spark, table)
    assert len(rows) == len(set(rows)) == 70
    (last, _) = FORMAT.positions(table, "default")
    assert last is not None and last.offsets == {TopicPartition(topics[0], 0): 40, TopicPartition(topics[1], 0): 30}
