"""`df.writeStream.format("pykafka")`: the same records as Spark's format("kafka") sink for the same stream, and
with exactlyOnce=true every record once for read_committed readers, also when a committed batch is replayed."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kafka_spark.client import Producer

HEADERS = "array(named_struct('key', 'h', 'value', cast(concat('v', cast(value as string)) as binary)))"


def produce(bootstrap: str, topic: str, count: int) -> None:
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for n in range(count):
            producer.send(topic, f"record-{n}".encode(), key=f"k{n % 11}".encode())
        producer.flush()


def landed(spark, kafka, topic, isolation="read_uncommitted"):
    """The records of `topic` as comparable tuples (our reader, with `isolation`)."""
    rows = (spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
            .option("includeHeaders", "true").option("kafka.isolation.level", isolation).load()
            .select("key", "value", "partition", "headers").collect())
    return sorted(((r.key, r.value, r.partition, tuple((h.key, h.value) for h in r.headers or ())) for r in rows),
                  key=repr)


def forget_last_commit(checkpoint):
    """Drop the last entry of Spark's commit log (and its checksum): the restarted query replays that batch."""
    last = max((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    last.unlink()
    (last.parent / f".{last.name}.crc").unlink(missing_ok=True)


def run_stream(spark, kafka, source, target, checkpoint, sink, **options):
    """An AvailableNow Kafka -> Kafka query to its end."""
    rows = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", source).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "120")
            .load().selectExpr("key", "value", f"{HEADERS} as headers", "partition"))
    writer = (rows.writeStream.format(sink).option("kafka.bootstrap.servers", kafka.bootstrap)
              .option("topic", target).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
    for k, v in options.items():
        writer = writer.option(k, v)
    query = writer.start()
    try:
        assert query.awaitTermination(300), "the AvailableNow stream did not finish"
    finally:
        query.stop()
    assert query.exception() is None
    return query


@pytest.fixture
def topics(kafka, topic_name):
    names = f"{topic_name}-in", f"{topic_name}-ours", f"{topic_name}-spark"
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    admin.create_topics([NewTopic(n, 3, 1) for n in names], wait_for_metadata=True)
    admin.close()
    produce(kafka.bootstrap, names[0], 500)
    return names


def test_write_stream_lands_the_same_records_as_sparks_sink(spark, kafka, topics, tmp_path):
    source, ours, theirs = topics
    run_stream(spark, kafka, source, ours, tmp_path / "ours", "pykafka")
    run_stream(spark, kafka, source, theirs, tmp_path / "spark", "kafka")
    mine = landed(spark, kafka, ours)
    assert len(mine) == 500
    assert mine == landed(spark, kafka, theirs)


def test_exactly_once_stream_and_a_replayed_batch_is_not_written_twice(spark, kafka, topics, tmp_path):
    source, ours, theirs = topics
    checkpoint = tmp_path / "ours"
    query = run_stream(spark, kafka, source, ours, checkpoint, "pykafka", exactlyOnce="true")
    assert len(query.recentProgress) >= 2  # several micro-batches, each in its own transactions
    expected = landed(spark, kafka, source)
    expected = sorted(((k, v, p, (("h", b"v" + v),)) for k, v, p, _ in expected), key=repr)
    assert landed(spark, kafka, ours, "read_committed") == expected
    # The driver "died" after the Kafka commits but before Spark's commit log recorded the last batch:
    # the restarted query replays it, and its tasks find it committed in Kafka.
    forget_last_commit(checkpoint)
    run_stream(spark, kafka, source, ours, checkpoint, "pykafka", exactlyOnce="true")
    assert landed(spark, kafka, ours, "read_committed") == expected
    assert landed(spark, kafka, ours) == expected  # nothing was even written and aborted
    # Spark's sink writes the replayed batch again.
    spark_checkpoint = tmp_path / "spark"
    run_stream(spark, kafka, source, theirs, spark_checkpoint, "kafka")
    forget_last_commit(spark_checkpoint)
    run_stream(spark, kafka, source, theirs, spark_checkpoint, "kafka")
    assert len(landed(spark, kafka, theirs)) > len(expected)
