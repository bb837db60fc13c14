"""Streams take the same `kafka.*` security options as batch reads: SASL/SCRAM over TLS gives the rows of
Spark's own stream, and the password shows up in no plan, progress report, checkpoint file or error."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality

from kafka_spark.local.kafka import SASL_USERS

USER = "alice"
PASSWORD = SASL_USERS[USER]


def options(kafka, password: str = PASSWORD) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": kafka.address("SASL_SSL"),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": ("org.apache.kafka.common.security.scram.ScramLoginModule required "
                                   f'username="{USER}" password="{password}";'),
        "kafka.ssl.truststore.location": str(kafka.ca_pem),
        "kafka.ssl.truststore.type": "PEM",
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "150",
    }


def start_available_now(spark, fmt: str, topic: str, opts: dict[str, str], checkpoint: Path, name: str):
    reader = spark.readStream.format(fmt).option("subscribe", topic)
    for k, v in opts.items():
        reader = reader.option(k, v)
    query = (reader.load().writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    return query


def run_available_now(*args):
    query = start_available_now(*args)
    assert query.awaitTermination(300), "the AvailableNow query did not finish"
    return query


@pytest.fixture(scope="module")
def secure_stream_topic(kafka):
    name = "pykafka-stream-secure"
    kafka.create_topic(name, partitions=2)
    kafka.tools.produce_perf(name, 400, record_size=40)
    return name


def test_sasl_ssl_stream_matches_spark_and_keeps_the_password_out(spark, kafka, secure_stream_topic, tmp_path,
                                                                  capsys):
    ours = run_available_now(spark, "pykafka", secure_stream_topic, options(kafka), tmp_path / "ours", "sec_ours")
    theirs = run_available_now(spark, "kafka", secure_stream_topic, options(kafka), tmp_path / "theirs",
                               "sec_theirs")
    assert ours.exception() is None and theirs.exception() is None
    # The same micro-batches (400 offsets at 150 per trigger), then the same rows.
    assert [p.sources[0].endOffset for p in ours.recentProgress] == \
        [p.sources[0].endOffset for p in theirs.recentProgress]
    assert len(ours.recentProgress) == 3
    assert_df_equality(spark.table("sec_ours"), spark.table("sec_theirs"), ignore_row_order=True)

    ours.explain(True)
    assert PASSWORD not in capsys.readouterr().out
    assert all(PASSWORD not in p.json for p in ours.recentProgress)
    for path in (tmp_path / "ours").rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_wrong_password_fails_the_query_without_echoing_it(spark, kafka, secure_stream_topic, tmp_path):
    wrong = "not-" + PASSWORD + "-7"
    query = start_available_now(spark, "pykafka", secure_stream_topic, options(kafka, wrong), tmp_path / "c",
                                "sec_wrong")
    with pytest.raises(Exception, match="SASL_AUTHENTICATION_FAILED") as info:
        query.awaitTermination(300)
    assert wrong not in str(info.value)
