"""`df.write.format("pykafka")` lands the same records as Spark's own `format("kafka")` sink, and rejects the
same DataFrames with the same messages."""

from __future__ import annotations

import re

import pytest
from kafka.admin import NewTopic

HEADERS = ("case when id % 3 = 0 then null else array(named_struct('key', 'h', 'value', cast(concat('v', id) as "
           "binary)), named_struct('key', concat('k', id), 'value', cast(null as binary))) end")


def write(df, fmt, kafka, **options):
    writer = df.write.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap)
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.mode("append").save()


def landed(spark, kafka, topic):
    """The records of `topic` as comparable tuples, read back with Spark's own Kafka source."""
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
            .option("includeHeaders", "true").load().select("key", "value", "partition", "headers").collect())
    records = [(r.key, r.value, r.partition, tuple((h.key, h.value) for h in r.headers or ())) for r in rows]
    return sorted(records, key=repr)


@pytest.fixture
def topics(admin, topic_name):
    """Two 3-partition topics: one for ours, one for Spark's sink."""
    names = f"{topic_name}-ours", f"{topic_name}-spark"
    admin.create_topics([NewTopic(n, 3, 1) for n in names], wait_for_metadata=True)
    return names


@pytest.mark.parametrize("value_type", ["string", "binary"])
@pytest.mark.parametrize("partition_column", [False, True])
def test_same_records_as_sparks_sink(spark, kafka, topics, value_type, partition_column):
    df = spark.range(60).selectExpr(
        "cast(concat('key-', id) as binary) as key", f"cast(concat('value-', id) as {value_type}) as value",
        f"{HEADERS} as headers", *(["cast(id % 3 as int) as partition"] if partition_column else []),
    ).repartition(2)
    for fmt, topic in zip(("pykafka", "kafka"), topics, strict=True):
        write(df.selectExpr(f"'{topic}' as topic", "*"), fmt, kafka)
    ours, theirs = (landed(spark, kafka, t) for t in topics)
    assert len(ours) == 60
    assert ours == theirs
    if partition_column:
        assert {(k, p) for k, _, p, _ in ours} == {(f"key-{i}".encode(), i % 3) for i in range(60)}


def test_topic_option_overrides_the_column_and_keys_may_be_null(spark, kafka, topics):
    df = spark.range(20).selectExpr("'not-this-topic' as topic", "cast(id as string) as value", "'k' as key")
    for fmt, topic in zip(("pykafka", "kafka"), topics, strict=True):
        write(df, fmt, kafka, topic=topic)
    ours, theirs = (landed(spark, kafka, t) for t in topics)
    assert len(ours) == 20
    assert ours == theirs
    nulls = spark.range(5).selectExpr("cast(null as binary) as key", "cast(id as string) as value")
    write(nulls, "pykafka", kafka, topic=topics[0])
    assert sum(1 for k, *_ in landed(spark, kafka, topics[0]) if k is None) == 5


def test_rows_without_headers_to_several_topics_land_as_with_sparks_sink(spark, kafka, admin, topic_name):
    # No headers: the rows go to the producer as Arrow columns (encoded from them); two topics in the topic
    # column, string keys and values with nulls, a partition column set on some rows, several Spark partitions.
    names = {(sink, t): f"{topic_name}-{sink}-{t}" for sink in ("ours", "spark") for t in "ab"}
    admin.create_topics([NewTopic(n, 4, 1) for n in names.values()], wait_for_metadata=True)
    for sink, fmt in (("ours", "pykafka"), ("spark", "kafka")):
        df = spark.range(0, 3000, 1, 3).selectExpr(
            f"case when id % 3 = 0 then '{names[(sink, 'a')]}' else '{names[(sink, 'b')]}' end as topic",
            "case when id % 7 = 0 then null else concat('k', cast(id % 13 as string)) end as key",
            "case when id % 11 = 0 then null else concat('v', cast(id as string), repeat('x', cast(id % 50 as int)))"
            " end as value",
            "case when id % 5 = 0 and id % 7 != 0 then cast(id % 4 as int) end as partition")
        write(df, fmt, kafka)
    for t in "ab":
        ours, theirs = (landed(spark, kafka, names[(sink, t)]) for sink in ("ours", "spark"))
        assert len(ours) == len(theirs) == (1000 if t == "a" else 2000)
        # null keys go to the sticky partitioner's random choices: compared without their partition
        assert sorted(((k, v, p) for k, v, p, _ in ours if k is not None), key=repr) == \
            sorted(((k, v, p) for k, v, p, _ in theirs if k is not None), key=repr)
        assert sorted((v for k, v, _, _ in ours if k is None), key=repr) == \
            sorted((v for k, v, _, _ in theirs if k is None), key=repr)


ERRORS = {
    "no value": ("cast(id as string) as key", "Required attribute 'value' not found"),
    "int value": ("cast(id as int) as value", "value attribute unsupported type int. value must be a(n) string or "
                                              "binary"),
    "long key": ("id as key", "'x' as value", "key attribute unsupported type bigint. key must be a(n) string or "
                                              "binary"),
    "string partition": ("'x' as value", "'1' as partition", "partition attribute unsupported type string. "
                                                             "partition must be a(n) int"),
    "bad headers": ("'x' as value", "array('h') as headers", "headers attribute unsupported type array<string>. "
                                                             "headers must be a(n) array<struct<key:string,"
                                                             "value:binary>>"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_column_errors_are_sparks(spark, kafka, topic_name, case):
    *columns, message = ERRORS[case]
    df = spark.range(1).selectExpr(*columns)
    for fmt in ("kafka", "pykafka"):
        with pytest.raises(Exception, match=re.escape(message)):
            write(df, fmt, kafka, topic=topic_name)


def test_topic_errors_are_sparks(spark, kafka):
    no_topic = spark.range(1).selectExpr("'x' as value")
    long_topic = spark.range(1).selectExpr("id as topic", "'x' as value")
    null_topic = spark.range(1).selectExpr("cast(null as string) as topic", "'x' as value")
    for fmt in ("kafka", "pykafka"):
        with pytest.raises(Exception, match="topic option required when no 'topic' attribute is present"):
            write(no_topic, fmt, kafka)
        with pytest.raises(Exception, match="topic attribute unsupported type bigint"):
            write(long_topic, fmt, kafka)
        with pytest.raises(Exception, match="The Kafka message data sent to the producer contains a null topic"):
            write(null_topic, fmt, kafka)


def test_delivery_failure_fails_the_job_with_the_brokers_error(spark, kafka, admin, topic_name):
    # The broker refuses a record over its max.message.bytes; the producer's own limit is above it.
    admin.create_topics([NewTopic(topic_name, 1, 1, topic_configs={"max.message.bytes": "1000"})],
                        wait_for_metadata=True)
    df = spark.range(1).selectExpr(f"'{topic_name}' as topic", "repeat('x', 5000) as value")
    with pytest.raises(Exception, match=r"MESSAGE_TOO_LARGE|RECORD_LIST_TOO_LARGE"):
        write(df, "pykafka", kafka, **{"kafka.max.request.size": "1048576"})


SPLIT_MODES = {
    "plain": {"kafka.enable.idempotence": "false", "kafka.max.in.flight.requests.per.connection": "1"},
    "idempotent": {},
    "exactlyOnce": {"exactlyOnce": "true"},
}


@pytest.mark.parametrize("mode", list(SPLIT_MODES))
def test_a_topic_limit_below_the_batch_size_splits_batches_and_keeps_every_row_once_in_order(
        spark, kafka, admin, topic_name, mode):
    # The sink builds batches of up to 1,000,000 bytes by default; the topic takes at most 20,000 bytes, so the broker
    # refuses them and the producer splits them (Spark's sink, at 16 KiB batches, never meets the limit).
    admin.create_topics([NewTopic(topic_name, 3, 1, topic_configs={"max.message.bytes": "20000"})],
                        wait_for_metadata=True)
    rows = 12000
    df = spark.range(0, rows, 1, 2).selectExpr(
        "cast(id % 97 as string) as key",
        "concat(cast(spark_partition_id() as string), ':', lpad(cast(id as string), 6, '0'), ':', repeat('v', 300))"
        " as value")
    write(df, "pykafka", kafka, topic=topic_name, **SPLIT_MODES[mode])
    landed_rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
                   .option("subscribe", topic_name).option("kafka.isolation.level", "read_committed").load()
                   .select("partition", "offset", "value").collect())
    ids = sorted(int(r.value.split(b":")[1]) for r in landed_rows)
    assert ids == list(range(rows)), "rows lost or written twice"
    by_source: dict[tuple[int, bytes], list[tuple[int, int]]] = {}
    for r in landed_rows:
        task, number, _ = r.value.split(b":")
        by_source.setdefault((r.partition, task), []).append((r.offset, int(number)))
    for writes in by_source.values():
        numbers = [n for _, n in sorted(writes)]
        assert numbers == sorted(numbers), "a task's rows to a partition were reordered"


def test_save_modes(spark, kafka, admin, topic_name):
    """Append writes with both sinks and Overwrite is refused by both with Spark's message. The default mode
    (ErrorIfExists) appends with Spark's sink, but Spark refuses it for every Python data source before the
    source runs, so `pykafka` needs `.mode("append")` (docs/writing.md says so)."""
    admin.create_topics([NewTopic(topic_name, 1, 1)], wait_for_metadata=True)
    df = spark.range(3).selectExpr("cast(id as string) as value")

    def writer(fmt):
        return df.write.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", topic_name)

    for fmt in ("kafka", "pykafka"):
        with pytest.raises(Exception, match=re.escape("Save mode Overwrite not allowed for Kafka. Allowed save "
                                                      "modes are Append and ErrorIfExists (default).")):
            writer(fmt).mode("overwrite").save()
    writer("kafka").save()
    with pytest.raises(Exception, match=r"UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*\"ErrorIfExists\""):
        writer("pykafka").save()
    writer("pykafka").mode("append").save()
    assert len(landed(spark, kafka, topic_name)) == 6
