"""Connections to Kafka 4.1: SASL PLAIN and SCRAM, TLS against the test CA, secrets never shown."""

from __future__ import annotations

import logging

import pytest

from kafka_spark.client import Cluster, KafkaClient
from kafka_spark.errors import AuthenticationError
from kafka_spark.local.kafka import SASL_USERS
from kafka_spark.local.tls import make_tls
from kafka_spark.protocol import ApiKey

USER, PASSWORD = next(iter(SASL_USERS.items()))
MODULES = {"PLAIN": "plain.PlainLoginModule", "SCRAM-SHA-256": "scram.ScramLoginModule",
           "SCRAM-SHA-512": "scram.ScramLoginModule"}


def _jaas(mechanism: str, password: str) -> str:
    return (f"org.apache.kafka.common.security.{MODULES[mechanism]} required "
            f'username="{USER}" password="{password}";')


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_login_succeeds_and_a_bad_password_fails(kafka, mechanism, caplog):
    caplog.set_level(logging.DEBUG)
    base = {"bootstrap.servers": kafka.address("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism}
    with KafkaClient({**base, "sasl.jaas.config": _jaas(mechanism, PASSWORD)}) as client:
        md = client.metadata([])
        assert list(md.brokers) == [1]
    wrong = "wrong-" + PASSWORD
    with Cluster({**base, "sasl.username": USER, "sasl.password": wrong}) as cluster, \
            pytest.raises(AuthenticationError) as info:
        cluster.refresh_metadata([])
    text = str(info.value)
    assert "uthentication failed" in text
    assert wrong not in text and wrong not in repr(cluster) and wrong not in repr(cluster.config)
    assert PASSWORD not in caplog.text and wrong not in caplog.text


def test_sasl_over_a_plaintext_listener_fails_clearly(kafka):
    with Cluster({"bootstrap.servers": kafka.address("SASL_PLAINTEXT"), "retries": 0}) as cluster, \
            pytest.raises(Exception, match=r"ApiVersions|closed|SASL"):
        cluster.refresh_metadata([])


def test_tls_verifies_against_the_test_ca_and_fails_against_another(kafka, tmp_path):
    ok = {"bootstrap.servers": kafka.address("SSL"), "security.protocol": "SSL",
          "ssl.truststore.location": str(kafka.ca_pem)}
    with Cluster(ok) as cluster:
        conn = cluster.any_connection()
        assert conn.version(ApiKey.FETCH) >= 12
        assert cluster.refresh_metadata([]).brokers[1].port == kafka.listeners["SSL"]
    other = make_tls(tmp_path / "other", ca_name="another-ca")
    with Cluster({**ok, "ssl.truststore.location": str(other.ca_pem)}) as cluster, \
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


def test_sasl_over_tls_is_not_offered_by_the_harness_but_config_accepts_it(kafka):
    with KafkaClient({"bootstrap.servers": kafka.bootstrap, "security.protocol": "SASL_SSL",
                      "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": _jaas("SCRAM-SHA-256", PASSWORD),
                      "ssl.truststore.location": str(kafka.ca_pem)}) as client:
        assert client.config.uses_tls and client.config.uses_sasl
