"""`kafka.*` security options pass through to the client: SASL/SCRAM and TLS listeners give the same rows
as Spark's source, and the SASL password shows up in no plan, explain output or error."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from kafka_spark.local.kafka import SASL_USERS

USER = "alice"
PASSWORD = SASL_USERS[USER]


def jaas(password: str) -> str:
    return (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{USER}" '
            f'password="{password}";')


@pytest.fixture(scope="module")
def secure_topic(kafka):
    name = "pykafka-secure"
    kafka.tools.create_topic(name, partitions=2)
    kafka.tools.produce_perf(name, 400, record_size=40)
    return name


def read(spark, fmt, bootstrap, **options):
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def sasl_options(password: str = PASSWORD) -> dict[str, str]:
    return {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": jaas(password)}


def test_sasl_scram_over_sasl_plaintext(spark, kafka, secure_topic, capsys):
    bootstrap = kafka.address("SASL_PLAINTEXT")
    ours = read(spark, "pykafka", bootstrap, subscribe=secure_topic, **sasl_options())
    theirs = read(spark, "kafka", bootstrap, subscribe=secure_topic, **sasl_options())
    assert ours.count() == 400
    assert_df_equality(ours, theirs, ignore_row_order=True)
    assert PASSWORD not in ours._jdf.queryExecution().toString()
    for mode in ("simple", "extended", "formatted", "cost"):
        ours.explain(mode)
    printed = capsys.readouterr().out
    assert "pykafka" in printed and PASSWORD not in printed


def test_wrong_sasl_password_fails_without_echoing_it(spark, kafka, secure_topic):
    wrong = "not-" + PASSWORD + "-42"
    with pytest.raises(Exception, match="SASL_AUTHENTICATION_FAILED") as info:
        read(spark, "pykafka", kafka.address("SASL_PLAINTEXT"), subscribe=secure_topic, **sasl_options(wrong)).count()
    assert wrong not in str(info.value)


def test_tls_with_a_pem_truststore(spark, kafka, secure_topic):
    options = {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": str(kafka.ca_pem),
               "kafka.ssl.truststore.type": "PEM"}
    bootstrap = kafka.address("SSL")
    ours = read(spark, "pykafka", bootstrap, subscribe=secure_topic, **options)
    theirs = read(spark, "kafka", bootstrap, subscribe=secure_topic, **options)
    assert ours.count() == 400
    assert_df_equality(ours, theirs, ignore_row_order=True)
