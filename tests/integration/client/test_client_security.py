"""Connections to Kafka 4.1: SASL PLAIN and SCRAM with and without TLS, TLS against the test CA, client
certificates (mutual TLS), secrets never shown."""

from __future__ import annotations

import logging

import pytest

from kafka_spark.client import Cluster, KafkaClient
from kafka_spark.errors import AuthenticationError, ConfigError
from kafka_spark.local.kafka import SASL_USERS
from kafka_spark.protocol import ApiKey

USER, PASSWORD = next(iter(SASL_USERS.items()))
MODULES = {"PLAIN": "plain.PlainLoginModule", "SCRAM-SHA-256": "scram.ScramLoginModule",
           "SCRAM-SHA-512": "scram.ScramLoginModule"}


def _jaas(mechanism: str, password: str) -> str:
    return (f"org.apache.kafka.common.security.{MODULES[mechanism]} required "
            f'username="{USER}" password="{password}";')


def _tls(kafka, listener: str, **extra: str) -> dict[str, str]:
    return {"bootstrap.servers": kafka.address(listener), "security.protocol": "SSL",
            "ssl.truststore.location": str(kafka.ca_pem), **extra}


def _round_trip(client: KafkaClient, topic: str) -> list[bytes]:
    """Produce a few records through the client's listener and fetch them back."""
    values = [f"record-{i}".encode() for i in range(5)]
    with client.producer() as producer:
        for value in values:
            producer.send(topic, value, partition=0)
        producer.flush(timeout=30)
    table = client.fetch(topic, 0, 0, len(values)).read_all()
    assert table is not None
    return table.column("value").to_pylist()


def _assert_hidden(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_login_reads_records_and_a_bad_password_fails(kafka, listener, mechanism, topic_name, caplog):
    caplog.set_level(logging.DEBUG)
    base = {"bootstrap.servers": kafka.address(listener), "security.protocol": listener, "sasl.mechanism": mechanism}
    if listener == "SASL_SSL":
        base["ssl.truststore.location"] = str(kafka.ca_pem)
    with KafkaClient({**base, "sasl.jaas.config": _jaas(mechanism, PASSWORD)}) as client:
        md = client.metadata([])
        assert md.brokers[1].port == kafka.listeners[listener]
        assert _round_trip(client, topic_name) == [f"record-{i}".encode() for i in range(5)]
    wrong = "wrong-" + PASSWORD
    with Cluster({**base, "sasl.username": USER, "sasl.password": wrong}) as cluster, \
            pytest.raises(AuthenticationError) as info:
        cluster.refresh_metadata([])
    assert "uthentication failed" in str(info.value)
    _assert_hidden(wrong, str(info.value), repr(cluster), repr(cluster.config), caplog.text)
    _assert_hidden(PASSWORD, caplog.text)


def test_sasl_over_a_plaintext_listener_fails_clearly(kafka):
    with Cluster({"bootstrap.servers": kafka.address("SASL_PLAINTEXT"), "retries": 0}) as cluster, \
            pytest.raises(Exception, match=r"ApiVersions|closed|SASL"):
        cluster.refresh_metadata([])


def test_tls_verifies_against_the_test_ca_and_fails_against_another(kafka):
    ok = _tls(kafka, "SSL")
    with Cluster(ok) as cluster:
        conn = cluster.any_connection()
        assert conn.version(ApiKey.FETCH) >= 12
        assert cluster.refresh_metadata([]).brokers[1].port == kafka.listeners["SSL"]
    with Cluster({**ok, "ssl.truststore.location": str(kafka.tls.foreign_ca_pem)}) as cluster, \
            pytest.raises(AuthenticationError, match="does not verify"):
        cluster.refresh_metadata([])


def test_tls_hostname_check_is_on_by_default(kafka):
    # the broker certificate names 127.0.0.1 and localhost only
    conf = {"bootstrap.servers": kafka.address("SSL").replace("127.0.0.1", "127.1"), "security.protocol": "SSL",
            "ssl.truststore.location": str(kafka.ca_pem), "retries": 0}
    with Cluster(conf) as cluster, pytest.raises(AuthenticationError, match="does not verify"):
        cluster.refresh_metadata([])
    with Cluster({**conf, "ssl.endpoint.identification.algorithm": ""}) as cluster:
        assert cluster.refresh_metadata([]).brokers


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain-key", "encrypted-key"])
def test_mutual_tls_with_a_certificate_from_the_ca_reads_records(kafka, encrypted, topic_name, caplog):
    caplog.set_level(logging.DEBUG)
    tls = kafka.tls
    key = ({"ssl.keystore.location": str(tls.client_encrypted_pem), "ssl.key.password": tls.client_key_password}
           if encrypted else {"ssl.keystore.location": str(tls.client_pem)})
    with KafkaClient(_tls(kafka, "MTLS", **key)) as client:
        assert client.metadata([]).brokers[1].port == kafka.listeners["MTLS"]
        assert _round_trip(client, topic_name) == [f"record-{i}".encode() for i in range(5)]
        _assert_hidden(tls.client_key_password, repr(client), str(client.config))
    _assert_hidden(tls.client_key_password, caplog.text)


def test_mutual_tls_without_a_client_certificate_is_refused(kafka):
    with Cluster(_tls(kafka, "MTLS")) as cluster, \
            pytest.raises(AuthenticationError, match=r"requires a client certificate.*ssl\.keystore\.location"):
        cluster.refresh_metadata([])


def test_mutual_tls_with_a_certificate_from_another_ca_is_refused(kafka):
    conf = _tls(kafka, "MTLS", **{"ssl.keystore.location": str(kafka.tls.foreign_client_pem)})
    with Cluster(conf) as cluster, pytest.raises(AuthenticationError, match="refused our client certificate"):
        cluster.refresh_metadata([])


def test_a_wrong_or_missing_key_password_fails_without_echoing_it(kafka, caplog):
    caplog.set_level(logging.DEBUG)
    conf = _tls(kafka, "MTLS", **{"ssl.keystore.location": str(kafka.tls.client_encrypted_pem)})
    with pytest.raises(ConfigError, match=r"encrypted; set ssl\.key\.password"):
        Cluster(conf)
    wrong = "not-" + kafka.tls.client_key_password
    with pytest.raises(ConfigError, match=r"ssl\.key\.password does not decrypt") as info:
        Cluster({**conf, "ssl.key.password": wrong})
    _assert_hidden(wrong, str(info.value), caplog.text)
    with pytest.raises(ConfigError, match="cannot load a PEM certificate chain and private key"):
        Cluster({**conf, "ssl.keystore.location": str(kafka.ca_pem)})
