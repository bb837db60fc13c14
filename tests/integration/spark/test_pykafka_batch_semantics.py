"""`format("pykafka")` equals Spark's `format("kafka")` on transactions, compaction, LogAppendTime,
per-partition timestamps, deleted data and every source option; where Spark fails, so do we."""

from __future__ import annotations

import json
import time

import pytest
from chispa import assert_df_equality
from kafka import KafkaProducer

from kafka_spark.client import KafkaClient, Producer

BASE_TS = 1_700_000_000_000


def _compacted(kafka, topic: str) -> None:
    # Segments roll at the first record after segment.ms, so rounds a little apart fill several
    # segments; the cleaner then rewrites all but the active one. Keys repeat, and some die.
    kafka.create_topic(topic, partitions=2, configs={
        "cleanup.policy": "compact", "segment.ms": 100, "min.cleanable.dirty.ratio": 0.01,
        "delete.retention.ms": 100, "min.compaction.lag.ms": 0})
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 0}) as producer:
        for round_ in range(5):
            for i in range(40):
                value = None if round_ == 3 and i % 10 == 0 else f"r{round_}-{i}".encode()
                producer.send(topic, value, key=f"k{i % 20}".encode())
            producer.flush()
            time.sleep(0.3)


def _has_gaps(kafka, topic: str) -> bool:
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        tps = client.partitions(topic)
        starts, ends = client.earliest_offsets(tps), client.latest_offsets(tps)
        records = 0
        for tp in tps:
            table = client.fetch(topic, tp.partition, starts[tp], ends[tp]).read_all()
            records += 0 if table is None else table.num_rows
        return records < sum(ends[tp] - starts[tp] for tp in tps)


def _transactions(kafka, topic: str) -> None:
    # Alternate committed and aborted transactions over two partitions.
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id=f"{topic}-txn")
    try:
        producer.init_transactions()
        for round_ in range(6):
            producer.begin_transaction()
            for i in range(7):
                producer.send(topic, f"r{round_}-{i}".encode(), key=f"k{i}".encode(), partition=i % 2)
            producer.flush()
            if round_ % 2:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
    finally:
        producer.close()


def _stamped(kafka, topic: str) -> None:
    # Partition p holds 100 records stamped BASE_TS + p*1000 + i*10: disjoint, known time ranges.
    with Producer({"bootstrap.servers": kafka.bootstrap}) as producer:
        for p in range(3):
            for i in range(100):
                producer.send(topic, f"v{p}-{i}".encode(), key=f"k{i}".encode(), partition=p,
                              timestamp_ms=BASE_TS + p * 1000 + i * 10)
        producer.flush()


def _delete_records(kafka, tmp_path, topic: str, partition: int, before: int) -> None:
    spec = tmp_path / f"delete-{topic}.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "offset": before}]}))
    kafka.tools.run("delete-records", "--offset-json-file", str(spec))


@pytest.fixture(scope="module")
def topics(kafka, tmp_path_factory):
    """Every topic of this module, written once; the compacted one first so the cleaner runs meanwhile."""
    suffix = str(time.time_ns())[-8:]
    names = {kind: f"pykafka-{kind}-{suffix}" for kind in ("compacted", "txn", "lat", "stamps", "deleted")}
    _compacted(kafka, names["compacted"])
    kafka.create_topic(names["txn"], partitions=2)
    _transactions(kafka, names["txn"])
    kafka.create_topic(names["lat"], partitions=2, configs={"message.timestamp.type": "LogAppendTime"})
    kafka.tools.produce_perf(names["lat"], 500, record_size=50)
    # Its timestamps are years old: without retention.ms=-1 the broker would delete them.
    kafka.create_topic(names["stamps"], partitions=3, configs={"retention.ms": -1})
    _stamped(kafka, names["stamps"])
    kafka.create_topic(names["deleted"], partitions=2)
    kafka.tools.produce_perf(names["deleted"], 1000, record_size=30, props={
        "partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"})
    _delete_records(kafka, tmp_path_factory.mktemp("delete-records"), names["deleted"], 0, 200)
    deadline = time.monotonic() + 60
    while not _has_gaps(kafka, names["compacted"]):
        if time.monotonic() > deadline:
            pytest.fail("the log cleaner did not compact the topic within 60 s")
        time.sleep(1)
    return names


def read(spark, kafka, fmt, **options):
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", options.pop("bootstrap", kafka.bootstrap))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def assert_same(spark, kafka, **options):
    """Both sources return the same rows for `options`; returns ours."""
    ours, theirs = read(spark, kafka, "pykafka", **options), read(spark, kafka, "kafka", **options)
    assert_df_equality(ours, theirs, ignore_row_order=True)
    return ours


def assert_both_fail(spark, kafka, ours_message, theirs_message, **options):
    """Both sources refuse `options`, each with a message matching its pattern."""
    with pytest.raises(Exception, match=ours_message):
        read(spark, kafka, "pykafka", **options).collect()
    # Spark's source retries failed offset lookups (3 times, 1 s apart by default).
    with pytest.raises(Exception, match=theirs_message):
        read(spark, kafka, "kafka", **{"fetchOffset.numRetries": "1", "fetchOffset.retryIntervalMs": "10",
                                       **options}).collect()


def offsets(topic, **by_partition):
    return json.dumps({topic: {p[1:]: o for p, o in by_partition.items()}})


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_transactions_with_aborts_under_both_isolation_levels(spark, kafka, topics, isolation):
    topic = topics["txn"]
    ours = assert_same(spark, kafka, subscribe=topic, **{"kafka.isolation.level": isolation})
    # 3 of 6 transactions of 7 records were committed; markers take offsets but are never rows.
    assert ours.count() == (21 if isolation == "read_committed" else 42)
    # Ranges that start inside an aborted transaction and end inside a committed one.
    assert_same(spark, kafka, subscribe=topic, startingOffsets=offsets(topic, p0=5, p1=9),
                endingOffsets=offsets(topic, p0=20, p1=-1), **{"kafka.isolation.level": isolation})


def test_compacted_topic_with_gaps_and_tombstones(spark, kafka, topics):
    topic = topics["compacted"]
    ours = assert_same(spark, kafka, subscribe=topic)
    assert ours.count() < 200
    # Bounds that may fall inside compacted-away offsets.
    assert_same(spark, kafka, subscribe=topic, startingOffsets=offsets(topic, p0=7, p1=3),
                endingOffsets=offsets(topic, p0=61, p1=-1), maxRecordsPerPartition="15")


def test_log_append_time_topic(spark, kafka, topics):
    ours = assert_same(spark, kafka, subscribe=topics["lat"])
    assert {r[0] for r in ours.select("timestampType").distinct().collect()} == {1}


def test_per_partition_timestamps_and_the_no_match_strategy(spark, kafka, topics):
    topic = topics["stamps"]

    def ts(**by_partition):
        return offsets(topic, **{p: BASE_TS + t if t >= 0 else t for p, t in by_partition.items()})

    ours = assert_same(spark, kafka, subscribe=topic, startingOffsetsByTimestamp=ts(p0=250, p1=1500, p2=2990))
    assert ours.count() == 75 + 50 + 1
    assert_same(spark, kafka, subscribe=topic, startingOffsetsByTimestamp=ts(p0=250, p1=1500, p2=2000),
                endingOffsetsByTimestamp=ts(p0=255, p1=9000, p2=2500))
    # A start after the last record: an error by default, the partition's end with 'latest'.
    late_start = ts(p0=250, p1=1500, p2=5000)
    assert_both_fail(spark, kafka, "No offset matched from request of topic-partition .*-2",
                     "No offset matched from request of topic-partition .*-2",
                     subscribe=topic, startingOffsetsByTimestamp=late_start)
    ours = assert_same(spark, kafka, subscribe=topic, startingOffsetsByTimestamp=late_start,
                       startingOffsetsByTimestampStrategy="latest")
    assert ours.count() == 75 + 50
    assert_both_fail(spark, kafka, "No offset matched", "No offset matched",
                     subscribe=topic, startingTimestamp=str(BASE_TS + 1500))
    assert_same(spark, kafka, subscribe=topic, startingTimestamp=str(BASE_TS + 1500),
                startingOffsetsByTimestampStrategy="latest")
    # Kafka reads -2 / -1 in a timestamp lookup as earliest / latest, and Spark passes them on.
    ours = assert_same(spark, kafka, subscribe=topic, startingOffsetsByTimestamp=ts(p0=-2, p1=-1, p2=2000))
    assert ours.count() == 200
    assert_same(spark, kafka, subscribe=topic, endingOffsetsByTimestamp=ts(p0=-1, p1=1500, p2=0))
    assert_both_fail(spark, kafka, "must give every selected topic-partition", "don't match what are assigned",
                     subscribe=topic, startingOffsetsByTimestamp=offsets(topic, p0=BASE_TS, p1=BASE_TS))


def test_deleted_records_and_fail_on_data_loss(spark, kafka, topics):
    topic = topics["deleted"]
    # Partition 0 now starts at 200.
    below = {"startingOffsets": offsets(topic, p0=50, p1=-2), "endingOffsets": offsets(topic, p0=300, p1=-1)}
    assert_both_fail(spark, kafka, r"offset 50 is no longer available \(log start 200.*failOnDataLoss=false",
                     "Some data may have been lost", subscribe=topic, **below)
    ours = assert_same(spark, kafka, subscribe=topic, failOnDataLoss="false", **below)
    assert ours.where("partition = 0").count() == 100
    gone = {"startingOffsets": offsets(topic, p0=50, p1=-2), "endingOffsets": offsets(topic, p0=150, p1=-1)}
    ours = assert_same(spark, kafka, subscribe=topic, failOnDataLoss="false", **gone)
    assert ours.where("partition = 0").count() == 0
    assert_same(spark, kafka, subscribe=topic)
    # An end past the high watermark asks for records that do not exist: an error, or read to the end.
    # (Spark's consumer polls for them for kafkaConsumer.pollTimeoutMs before it gives up.)
    past = {"endingOffsets": offsets(topic, p0=5000, p1=-1), "kafkaConsumer.pollTimeoutMs": "1000"}
    assert_both_fail(spark, kafka, "partition ends at 500 .*failOnDataLoss=false", "Some data may have been lost",
                     subscribe=topic, **past)
    assert_same(spark, kafka, subscribe=topic, failOnDataLoss="false", **past)


def test_partition_selection_edges(spark, kafka, topics):
    topic = topics["stamps"]
    # Spark leaves out assigned partitions the topic does not have.
    ours = assert_same(spark, kafka, assign=json.dumps({topic: [0, 2, 7]}))
    assert ours.count() == 200
    assert_same(spark, kafka, subscribePattern=f"{topic}|no-such-topic.*")
    assert_both_fail(spark, kafka, "names topic-partitions that the query does not read",
                     "don't match what are assigned",
                     subscribe=topic, startingOffsets=offsets(topic, p0=1, p1=1, p2=1, p5=1))


def test_options_without_effect_on_the_rows(spark, kafka, topics):
    # Spark's JVM tuning knobs, streaming-only options, consumer settings and group ids are accepted
    # so pipelines switch unchanged, and leave the rows alone.
    knobs = {
        "fetchOffset.numRetries": "5", "fetchOffset.retryIntervalMs": "20", "kafkaConsumer.pollTimeoutMs": "5000",
        "maxOffsetsPerTrigger": "10", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "1m",
        "groupIdPrefix": "knobs", "commitOffsetsToKafka": "true", "kafka.client.id": "knobs-client",
        "kafka.max.poll.records": "50", "kafka.fetch.max.bytes": "1000", "kafka.max.partition.fetch.bytes": "700",
        "kafka.request.timeout.ms": "20000",
    }
    ours = assert_same(spark, kafka, subscribe=topics["stamps"], **knobs)
    assert ours.count() == 300
    assert_same(spark, kafka, subscribe=topics["lat"], **{"kafka.group.id": "fixed-group"})


def test_tasks_split_exactly_when_sparks_do(spark, kafka, topics):
    """Spark judges splitting on the ranges before resolving earliest/latest (-2/-1): an
    earliest-to-latest read is one task per partition whatever maxRecordsPerPartition says."""
    topic = topics["stamps"]  # 3 partitions of 100 records

    def tasks(fmt, **options):
        return read(spark, kafka, fmt, subscribe=topic, **options).rdd.getNumPartitions()

    cases = [
        {"maxRecordsPerPartition": "30"},  # unresolved size 1 each: not split
        {"maxRecordsPerPartition": "30", "startingOffsets": offsets(topic, p0=0, p1=0, p2=-2)},  # -1 - 0 < 0
        {"maxRecordsPerPartition": "30", "startingOffsets": offsets(topic, p0=0, p1=50, p2=-2),
         "endingOffsets": offsets(topic, p0=100, p1=90, p2=-1)},  # p0 is 100 > 30: all split
        {"maxRecordsPerPartition": "30", "endingOffsets": offsets(topic, p0=29, p1=-1, p2=31)},  # 31 + 2 > 30
        {"minPartitions": "3"},  # not more than the partitions: one each
        {"minPartitions": "7"},
        {"minPartitions": "2", "maxRecordsPerPartition": "40",
         "startingOffsets": offsets(topic, p0=0, p1=0, p2=0), "endingOffsets": offsets(topic, p0=100, p1=10, p2=0)},
    ]
    expected = [3, 3, 10, 7, 3, 6, 4]
    got = [(tasks("pykafka", **c), tasks("kafka", **c)) for c in cases]
    assert got == [(n, n) for n in expected], got
