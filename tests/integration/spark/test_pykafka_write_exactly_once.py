"""`df.write.format("pykafka").option("exactlyOnce", "true")`: every task writes in a Kafka transaction that the
driver commits with the job, so read_committed readers see each row once, and nothing of a failed job."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient, NewTopic


def write(df, kafka, **options):
    writer = df.write.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.mode("append").save()


def values(spark, kafka, topic, isolation):
    """The values in `topic` as a reader with `isolation` sees them (our fetcher)."""
    rows = (spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", topic).option("kafka.isolation.level", isolation).load()
            .select("value").collect())
    return sorted(r.value.decode() for r in rows)


@pytest.fixture
def topic(kafka, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    admin.create_topics([NewTopic(topic_name, 3, 1)], wait_for_metadata=True)
    admin.close()
    return topic_name


def test_exactly_once_batch_write_is_committed_with_the_job(spark, kafka, topic):
    df = spark.range(300).selectExpr("cast(id % 7 as string) as key", "cast(id as string) as value").repartition(4)
    write(df, kafka, topic=topic, exactlyOnce="true")
    expected = sorted(str(i) for i in range(300))
    assert values(spark, kafka, topic, "read_committed") == expected
    assert values(spark, kafka, topic, "read_uncommitted") == expected
    # a second job with the same prefix fences nothing of the first: its records stay committed
    write(df.limit(10), kafka, topic=topic, exactlyOnce="true", transactionalIdPrefix=f"{topic}-job")
    write(df.limit(10), kafka, topic=topic, exactlyOnce="true", transactionalIdPrefix=f"{topic}-job")
    assert len(values(spark, kafka, topic, "read_committed")) == 320


def test_a_failed_job_leaves_nothing_for_read_committed_readers(spark, kafka, topic):
    # Partition 0 writes and hands its open transaction to the driver; partition 1 fails, so the job aborts.
    df = spark.range(0, 200, 1, 2).selectExpr(
        "if(id < 150, cast(id as string), cast(raise_error('the job fails here') as string)) as value")
    with pytest.raises(Exception, match="the job fails here"):
        write(df, kafka, topic=topic, exactlyOnce="true")
    assert values(spark, kafka, topic, "read_committed") == []


@pytest.mark.parametrize(("options", "message"), [
    ({"exactlyOnce": "maybe"}, "exactlyOnce must be true or false"),
    ({"transactionalIdPrefix": "p"}, "transactionalIdPrefix applies only with exactlyOnce=true"),
    ({"exactlyOnce": "true", "kafka.acks": "1"}, "kafka.enable.idempotence must not be false"),
    ({"exactlyOnce": "true", "kafka.transactional.id": "t"}, "use transactionalIdPrefix"),
])
def test_bad_exactly_once_options_fail_at_planning(spark, kafka, topic, options, message):
    with pytest.raises(Exception, match=message):
        write(spark.range(1).selectExpr("'x' as value"), kafka, topic=topic, **options)
