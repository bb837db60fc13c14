"""`spark.read.format("pykafka")` over Kafka 4.1's GSSAPI listener with a Java user's Kerberos options gives the
rows Spark's own `format("kafka")` gives with the same options; a login that cannot work fails the query with
a one-line error that names what to fix, before anything is written."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from harness.kerberos_kafka import KERBEROS_LISTENER, SERVICE_NAME, krb5_login

from kafka_spark.client import KafkaClient

TOPIC = "pykafka-gssapi"
RECORDS = 60


@pytest.fixture(scope="module")
def krb_topic(kerberos_kafka):
    """Two partitions of small keyed records, produced over PLAINTEXT."""
    kerberos_kafka.create_topic(TOPIC, partitions=2)
    with KafkaClient({"bootstrap.servers": kerberos_kafka.bootstrap}) as client, client.producer() as producer:
        for i in range(RECORDS):
            producer.send(TOPIC, f"value-{i}".encode(), key=f"key-{i}".encode(), partition=i % 2)
        producer.flush(timeout=30)
    return TOPIC


@pytest.fixture(scope="module")
def java_kerberos(spark, kdc):
    """Spark's JVM (the driver, and so local executors) finds the test KDC as a Java user's would: through
    `java.security.krb5.conf`, read at the JVM's first Kerberos login."""
    jvm = spark.sparkContext._jvm
    jvm.java.lang.System.setProperty("java.security.krb5.conf", str(kdc.krb5_conf))
    # Hadoop's login at Spark's start may have read another krb5.conf already: re-read (Spark opens
    # sun.security.krb5 to unnamed modules)
    jvm.sun.security.krb5.Config.refresh()
    return spark


def _options(kerberos_kafka, jaas: str, service: str = SERVICE_NAME) -> dict[str, str]:
    return {"kafka.bootstrap.servers": kerberos_kafka.address(KERBEROS_LISTENER),
            "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "GSSAPI",
            "kafka.sasl.kerberos.service.name": service, "kafka.sasl.jaas.config": jaas, "subscribe": TOPIC}


def _commits(table) -> list:
    # Delta may create the log folder before the query fails; a commit is a version file in it
    return sorted((table / "_delta_log").glob("*.json"))


def _read(spark, fmt: str, options: dict[str, str]):
    return spark.read.format(fmt).options(**options).load()


@pytest.mark.timeout(300)
def test_pykafka_reads_what_spark_kafka_reads(java_kerberos, kerberos_kafka, alice, krb_topic):
    options = _options(kerberos_kafka, alice.jaas())
    ours = _read(java_kerberos, "pykafka", options)
    theirs = _read(java_kerberos, "kafka", options)
    assert ours.count() == RECORDS
    assert_df_equality(ours, theirs, ignore_row_order=True)


@pytest.mark.timeout(180)
def test_a_missing_keytab_fails_the_query_naming_keytab(spark, kerberos_kafka, alice, krb_topic, tmp_path):
    missing = tmp_path / "nowhere.keytab"
    table = tmp_path / "table"
    with pytest.raises(Exception, match=rf"ConfigError: sasl\.jaas\.config: keyTab {missing} does not exist"):
        _read(spark, "pykafka", _options(kerberos_kafka, krb5_login(missing, alice.principal))) \
            .write.format("delta").save(str(table))
    assert not _commits(table)


@pytest.mark.timeout(180)
def test_a_wrong_service_name_fails_the_query_naming_the_option(spark, kerberos_kafka, alice, krb_topic, tmp_path):
    table = tmp_path / "table"
    with pytest.raises(Exception, match=r"AuthenticationError: GSSAPI: .*sasl\.kerberos\.service\.name"):
        _read(spark, "pykafka", _options(kerberos_kafka, alice.jaas(), service="kafak")) \
            .write.format("delta").save(str(table))
    assert not _commits(table)
