"""Our client on Kafka 4.1's GSSAPI listener: keytab and ticket-cache (kinit) logins produce and read records;
a login that cannot work fails at once with one line that names what to fix."""

from __future__ import annotations

import logging
import os
import subprocess
import time

import pytest
from harness.kdc import kerberos_tool
from harness.kerberos_kafka import KERBEROS_LISTENER, KERBEROS_TLS_LISTENER
from krb_logins import gssapi_config

from kafka_spark.client import Cluster, KafkaClient
from kafka_spark.errors import AuthenticationError, ConfigError

VALUES = [f"kerberos-{i}".encode() for i in range(5)]


def _round_trip(client: KafkaClient, topic: str) -> list[bytes]:
    """Produce a few records through the client's (GSSAPI) listener and fetch them back."""
    with client.producer() as producer:
        for value in VALUES:
            producer.send(topic, value, partition=0)
        producer.flush(timeout=30)
    table = client.fetch(topic, 0, 0, len(VALUES)).read_all()
    assert table is not None
    return table.column("value").to_pylist()


def test_a_keytab_login_produces_and_reads(kerberos_kafka, alice, topic_name, caplog):
    caplog.set_level(logging.DEBUG)
    kerberos_kafka.create_topic(topic_name)
    with KafkaClient(gssapi_config(kerberos_kafka, alice)) as client:
        assert client.metadata([]).brokers[1].port == kerberos_kafka.listeners[KERBEROS_LISTENER]
        assert _round_trip(client, topic_name) == VALUES
    assert "authenticated to" in caplog.text and "GSSAPI" in caplog.text
    keytab = alice.keytab.read_bytes()
    assert keytab.hex() not in caplog.text and keytab.decode("latin-1") not in caplog.text


def test_gssapi_over_tls(kerberos_kafka, alice, topic_name):
    conf = gssapi_config(kerberos_kafka, alice, **{
        "bootstrap.servers": kerberos_kafka.address(KERBEROS_TLS_LISTENER), "security.protocol": "SASL_SSL",
        "ssl.truststore.location": str(kerberos_kafka.ca_pem)})
    kerberos_kafka.create_topic(topic_name)
    with KafkaClient(conf) as client:
        assert client.metadata([]).brokers[1].port == kerberos_kafka.listeners[KERBEROS_TLS_LISTENER]
        assert _round_trip(client, topic_name) == VALUES


@pytest.mark.parametrize("where", ["ticketCache", "KRB5CCNAME", "no sasl.jaas.config"])
def test_a_ticket_cache_login_from_kinit(kdc, kerberos_kafka, alice, topic_name, tmp_path, monkeypatch, where):
    cache = kdc.kinit(alice.principal, alice.keytab, tmp_path / "ccache")
    module = "com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true"
    login: dict[str, str] = {}
    if where == "ticketCache":
        login["sasl.jaas.config"] = f'{module} ticketCache="{cache}" principal="{alice.principal}";'
    else:
        monkeypatch.setenv("KRB5CCNAME", f"FILE:{cache}")
        if where == "KRB5CCNAME":
            login["sasl.jaas.config"] = f"{module};"
    kerberos_kafka.create_topic(topic_name)
    with KafkaClient(gssapi_config(kerberos_kafka, **login)) as client:
        assert _round_trip(client, topic_name) == VALUES
    # the broker's service ticket went into the kinit cache: this login used it, not a keytab
    listing = subprocess.run([kerberos_tool("klist"), "-c", f"FILE:{cache}"], capture_output=True, text=True,
                             check=True).stdout
    assert "kafka/localhost@" in listing


def test_a_connection_reauthenticates_with_a_new_ticket_exchange(kerberos_kafka, alice, topic_name, caplog):
    # KIP-368: the broker grants sessions; before one ends the client authenticates again on the same socket
    caplog.set_level(logging.DEBUG, logger="kafka_spark.client.net.connection")
    kerberos_kafka.create_topic(topic_name)
    with KafkaClient(gssapi_config(kerberos_kafka, alice)) as client:
        assert _round_trip(client, topic_name) == VALUES
        conn = client.cluster.connection(1)
        socket_before = conn._sock
        assert conn._session_ends is not None  # the listener's connections.max.reauth.ms gave a lifetime
        conn._reauth_at = time.monotonic()  # as if 85-95% of the session had passed
        table = client.fetch(topic_name, 0, 0, len(VALUES)).read_all()
        assert table is not None and table.column("value").to_pylist() == VALUES
        assert conn._sock is socket_before and conn._reauth_at > time.monotonic()
    node = f"1 at 127.0.0.1:{kerberos_kafka.listeners[KERBEROS_LISTENER]}"
    assert caplog.text.count(f"authenticated to {node} with GSSAPI") >= 2


def test_a_kinit_cache_is_renewed_on_javas_schedule(kdc, kerberos_kafka, alice, tmp_path, caplog):
    # a renewable 6 s ticket, renewed once half its life has passed (window factor 0.5, no jitter)
    caplog.set_level(logging.INFO, logger="kafka_spark.client.auth.gssapi.renewal")
    cache = tmp_path / "ccache"
    subprocess.run([kerberos_tool("kinit"), "-l", "6s", "-r", "5m", "-k", "-t", str(alice.keytab), "-c",
                    f"FILE:{cache}", alice.principal], env=kdc.env(), check=True, capture_output=True)
    jaas = f'com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache="{cache}";'
    conf = gssapi_config(kerberos_kafka, **{"sasl.jaas.config": jaas, "sasl.kerberos.min.time.before.relogin": "0",
                                            "sasl.kerberos.ticket.renew.window.factor": "0.5",
                                            "sasl.kerberos.ticket.renew.jitter": "0"})
    first = _tgt(cache)
    with KafkaClient(conf) as client:
        client.metadata([])
    assert _tgt(cache) == first and "renewed" not in caplog.text  # not due yet
    time.sleep(max(0.0, first.start + 3.2 - time.time()))
    with KafkaClient(conf) as client:  # a new connection authenticates: the ticket is due
        client.metadata([])
    renewed = _tgt(cache)
    assert renewed.end > first.end and renewed.renew_until == first.renew_until
    assert f"renewed the Kerberos ticket in {cache}" in caplog.text


def _tgt(cache):
    from kafka_spark.client.auth.gssapi.renewal import tgt_times

    listing = subprocess.run([kerberos_tool("klist"), "-c", f"FILE:{cache}"], capture_output=True, text=True,
                             check=True, env={**os.environ, "LC_ALL": "C", "TZ": "UTC"}).stdout
    ticket = tgt_times(listing)
    assert ticket is not None
    return ticket


def test_an_empty_ticket_cache_says_to_run_kinit(kerberos_kafka, tmp_path):
    jaas = (f'com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true '
            f'ticketCache="{tmp_path / "none"}";')
    with Cluster(gssapi_config(kerberos_kafka, **{"sasl.jaas.config": jaas, "retries": "0"})) as cluster, \
            pytest.raises(AuthenticationError, match="run kinit") as info:
        cluster.refresh_metadata([])
    assert "\n" not in str(info.value)


def test_a_wrong_service_name_fails_at_once_and_names_the_option(kerberos_kafka, alice):
    conf = gssapi_config(kerberos_kafka, alice, **{"sasl.kerberos.service.name": "kafak"})
    with Cluster(conf) as cluster, pytest.raises(AuthenticationError, match=r"sasl\.kerberos\.service\.name"):
        cluster.refresh_metadata([])


def test_a_missing_keytab_is_a_configuration_error(kerberos_kafka, alice, tmp_path):
    from harness.kerberos_kafka import krb5_login

    missing = tmp_path / "alice.keytab"
    with pytest.raises(ConfigError, match=rf"sasl\.jaas\.config: keyTab {missing} does not exist"):
        KafkaClient(gssapi_config(kerberos_kafka, **{"sasl.jaas.config": krb5_login(missing, alice.principal)}))
