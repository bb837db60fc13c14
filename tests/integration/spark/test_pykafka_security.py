"""`kafka.*` security options pass through to the client: SASL/SCRAM, TLS, SASL over TLS and client
certificates give the same rows as Spark's source, and no password shows up in a plan, explain output or error."""

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
    kafka.create_topic(name, partitions=2)
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


def tls_options(kafka) -> dict[str, str]:
    return {"kafka.ssl.truststore.location": str(kafka.ca_pem), "kafka.ssl.truststore.type": "PEM"}


def assert_same_rows_and_no_secret(spark, bootstrap: str, topic: str, secret: str, capsys,
                                   options: dict[str, str], theirs_options: dict[str, str] | None = None) -> None:
    ours = read(spark, "pykafka", bootstrap, subscribe=topic, **options)
    theirs = read(spark, "kafka", bootstrap, subscribe=topic, **(theirs_options or options))
    assert ours.count() == 400
    assert_df_equality(ours, theirs, ignore_row_order=True)
    assert secret not in ours._jdf.queryExecution().toString()
    for mode in ("simple", "extended", "formatted", "cost"):
        ours.explain(mode)
    printed = capsys.readouterr().out
    assert "pykafka" in printed and secret not in printed


def test_sasl_scram_over_sasl_plaintext(spark, kafka, secure_topic, capsys):
    assert_same_rows_and_no_secret(spark, kafka.address("SASL_PLAINTEXT"), secure_topic, PASSWORD, capsys,
                                   sasl_options())


def test_sasl_scram_over_tls(spark, kafka, secure_topic, capsys):
    options = {**sasl_options(), **tls_options(kafka), "kafka.security.protocol": "SASL_SSL"}
    assert_same_rows_and_no_secret(spark, kafka.address("SASL_SSL"), secure_topic, PASSWORD, capsys, options)


def test_mutual_tls_with_an_encrypted_client_key(spark, kafka, secure_topic, capsys):
    tls = kafka.tls
    base = {**tls_options(kafka), "kafka.security.protocol": "SSL", "kafka.ssl.keystore.type": "PEM"}
    options = {**base, "kafka.ssl.keystore.location": str(tls.client_encrypted_pem),
               "kafka.ssl.key.password": tls.client_key_password}
    # Java 17 cannot decrypt a PBES2 (AES) PEM key, so Spark's source reads with the same certificate unencrypted
    theirs = {**base, "kafka.ssl.keystore.location": str(tls.client_pem)}
    assert_same_rows_and_no_secret(spark, kafka.address("MTLS"), secure_topic, tls.client_key_password, capsys,
                                   options, theirs)


def test_wrong_sasl_password_fails_without_echoing_it(spark, kafka, secure_topic):
    wrong = "not-" + PASSWORD + "-42"
    with pytest.raises(Exception, match="SASL_AUTHENTICATION_FAILED") as info:
        read(spark, "pykafka", kafka.address("SASL_PLAINTEXT"), subscribe=secure_topic, **sasl_options(wrong)).count()
    assert wrong not in str(info.value)


def test_tls_with_a_pem_truststore(spark, kafka, secure_topic):
    options = {"kafka.security.protocol": "SSL", **tls_options(kafka)}
    bootstrap = kafka.address("SSL")
    ours = read(spark, "pykafka", bootstrap, subscribe=secure_topic, **options)
    theirs = read(spark, "kafka", bootstrap, subscribe=secure_topic, **options)
    assert ours.count() == 400
    assert_df_equality(ours, theirs, ignore_row_order=True)
