"""SASL/OAUTHBEARER through Spark: `pykafka` batch reads give the rows of Spark's own `kafka` source with the same
`kafka.*` options (unsecured tokens and OIDC client credentials), a stream runs across several token lifetimes and
re-authentications delivering every record once, `write.format("pykafka")` lands records, and a Delta load whose
login fails commits nothing."""

from __future__ import annotations

import threading
import time

import pytest
from chispa import assert_df_equality
from harness.oauth import CLIENT_SECRET, oidc, spark_options, unsecured
from harness.oauth_kafka import OIDC, reauthentications

from kafka_spark.client import KafkaClient, Producer
from kafka_spark.delta import load
from kafka_spark.sink import LoadOptions

RECORDS = 300


@pytest.fixture(scope="module")
def oauth_topic(oauth_kafka) -> str:
    name = "pykafka-oauthbearer"
    oauth_kafka.create_topic(name, partitions=2)
    with Producer({"bootstrap.servers": oauth_kafka.bootstrap, "linger.ms": 5}) as producer:
        for i in range(RECORDS):
            producer.send(name, f"value-{i}".encode(), key=f"k{i % 7}".encode())
        producer.flush(60)
    return name


def read(spark, fmt: str, topic: str, props: dict[str, str]):
    reader = spark.read.format(fmt).option("subscribe", topic)
    for k, v in spark_options(props).items():
        reader = reader.option(k, v)
    return reader.load()


def test_unsecured_token_batch_matches_spark(spark, oauth_kafka, oauth_topic):
    props = unsecured(oauth_kafka)
    ours, theirs = read(spark, "pykafka", oauth_topic, props), read(spark, "kafka", oauth_topic, props)
    assert ours.count() == RECORDS
    assert_df_equality(ours, theirs, ignore_row_order=True)


def test_oidc_batch_matches_spark_and_hides_the_client_secret(spark, oauth_kafka, oauth_server, oauth_topic, capsys):
    props = oidc(oauth_kafka, oauth_server)
    ours, theirs = read(spark, "pykafka", oauth_topic, props), read(spark, "kafka", oauth_topic, props)
    assert ours.count() == RECORDS
    assert_df_equality(ours, theirs, ignore_row_order=True)
    assert CLIENT_SECRET not in ours._jdf.queryExecution().toString()
    for mode in ("simple", "extended", "formatted"):
        ours.explain(mode)
    assert CLIENT_SECRET not in capsys.readouterr().out


def test_unsigned_token_fails_the_read_with_the_brokers_reason(spark, oauth_kafka, oauth_topic):
    with pytest.raises(Exception, match=r"SASL_AUTHENTICATION_FAILED.*status=invalid_token") as info:
        read(spark, "pykafka", oauth_topic, unsecured(oauth_kafka, listener=OIDC)).count()
    assert "OAUTHBEARER" in str(info.value)


def test_stream_across_token_lifetimes_and_re_authentications(spark, oauth_kafka, oauth_server, topic_name,
                                                              tmp_path):
    oauth_kafka.create_topic(topic_name, partitions=2)
    lifetimes = 2.5  # tokens live 10 s and sessions at most 4 s: ~3 token refreshes, several re-authentications
    per_second, seconds = 20, int(lifetimes * oauth_server.token_expiry_s)
    reauth_before = reauthentications(oauth_kafka)
    reader = spark.readStream.format("pykafka").option("subscribe", topic_name).option("startingOffsets", "earliest")
    for k, v in spark_options(oidc(oauth_kafka, oauth_server)).items():
        reader = reader.option(k, v)
    # short triggers: the source asks the broker often enough to hit each session's re-authentication window
    query = (reader.load().writeStream.format("memory").queryName("oauth_stream")
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="200 milliseconds").start())
    sent: list[str] = []

    def feed() -> None:
        with Producer({"bootstrap.servers": oauth_kafka.bootstrap, "linger.ms": 5}) as producer:
            for second in range(seconds):
                for i in range(per_second):
                    value = f"s{second}-{i}"
                    producer.send(topic_name, value.encode(), key=str(i).encode())
                    sent.append(value)
                producer.flush(30)
                time.sleep(1)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        feeder.join(seconds + 60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and query.exception() is None:
            if spark.table("oauth_stream").count() >= len(sent):
                break
            time.sleep(0.5)
        assert query.exception() is None and query.isActive
        rows = spark.table("oauth_stream").select("partition", "offset", "value").collect()
    finally:
        query.stop()
    assert len(sent) == per_second * seconds
    assert len(rows) == len(sent)  # nothing twice
    assert len({(r["partition"], r["offset"]) for r in rows}) == len(sent)
    assert sorted(bytes(r["value"]).decode() for r in rows) == sorted(sent)  # every record
    # re-authentication is lazy (a request in the last 5-15% of a session); idle connections reconnect instead
    reauths = reauthentications(oauth_kafka) - reauth_before
    print(f"broker-side re-authentications during the stream: {reauths}")
    assert reauths >= 2, f"the broker saw {reauths} re-authentications"


def test_write_to_an_oauthbearer_listener(spark, oauth_kafka, oauth_server, topic_name):
    oauth_kafka.create_topic(topic_name)
    df = spark.range(50).selectExpr("CAST(id AS STRING) AS key", "CONCAT('w-', id) AS value")
    writer = df.write.format("pykafka").option("topic", topic_name)
    for k, v in spark_options(oidc(oauth_kafka, oauth_server)).items():
        writer = writer.option(k, v)
    writer.mode("append").save()
    with KafkaClient({"bootstrap.servers": oauth_kafka.bootstrap}) as client:
        table = client.fetch(topic_name, 0, 0, 50).read_all()
    assert table is not None
    assert sorted(v.decode() for v in table.column("value").to_pylist()) == sorted(f"w-{i}" for i in range(50))


def _version(spark, table: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{table}`").agg({"version": "max"}).collect()[0][0])


def _produce(node, topic: str, values: list[str]) -> None:
    with Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5}) as producer:
        for value in values:
            producer.send(topic, value.encode(), partition=0)
        producer.flush(30)


def test_delta_load_whose_login_fails_commits_nothing(spark, oauth_kafka, oauth_server, topic_name, tmp_path):
    oauth_kafka.create_topic(topic_name)
    _produce(oauth_kafka, topic_name, [f"v{i}" for i in range(100)])
    table = str(tmp_path / "table")
    good = oidc(oauth_kafka, oauth_server)
    first = load(spark, LoadOptions(table=table, kafka=good, topics=[topic_name], sink_id="oauth"))
    assert first.status == "committed" and first.rows == 100
    version = _version(spark, table)
    _produce(oauth_kafka, topic_name, ["one more"])  # something new to load
    path = oauth_server.token_url.split("/", 3)[3]
    unreachable = {**good, "sasl.login.retry.backoff.max.ms": "500",
                   "sasl.oauthbearer.token.endpoint.url": f"http://127.0.0.1:1/{path}"}
    with pytest.raises(Exception, match="cannot reach it") as info:
        load(spark, LoadOptions(table=table, kafka=unreachable, topics=[topic_name], sink_id="oauth"))
    assert CLIENT_SECRET not in str(info.value)
    with pytest.raises(Exception, match="SASL_AUTHENTICATION_FAILED"):
        load(spark, LoadOptions(table=table, kafka=unsecured(oauth_kafka, listener=OIDC), topics=[topic_name],
                                sink_id="oauth"))
    assert _version(spark, table) == version
    assert spark.read.format("delta").load(table).count() == 100


def test_exactly_once_stream_writes_through_an_oidc_login(spark, oauth_kafka, oauth_server, topic_name, tmp_path):
    """`writeStream.format("pykafka")` with `exactlyOnce=true` on the OIDC listener: transactional writes
    authenticate like any other; a read_committed reader sees every record once."""
    source, sink = f"{topic_name}-in", f"{topic_name}-out"
    oauth_kafka.create_topic(source)
    oauth_kafka.create_topic(sink)
    _produce(oauth_kafka, source, [f"e{i}" for i in range(40)])
    login = spark_options(oidc(oauth_kafka, oauth_server))
    reader = spark.readStream.format("pykafka").option("subscribe", source).option("startingOffsets", "earliest")
    writer = (reader.options(**login).load().selectExpr("key", "value").writeStream.format("pykafka")
              .options(**login).option("topic", sink).option("exactlyOnce", "true")
              .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True))
    writer.start().awaitTermination(120)
    with KafkaClient({"bootstrap.servers": oauth_kafka.bootstrap, "isolation.level": "read_committed"}) as client:
        [tp] = client.partitions(sink)
        table = client.fetch(sink, 0, 0, client.latest_offsets([tp])[tp]).read_all()
    assert table is not None
    assert sorted(v.decode() for v in table.column("value").to_pylist()) == sorted(f"e{i}" for i in range(40))
