"""SaslHandshake and SaslAuthenticate against Kafka 4.1's SASL_PLAINTEXT listener."""

from __future__ import annotations

from typing import Any

import pytest
from broker_wire import BrokerWire
from proof_checks import HOST, check
from proof_flows import sasl_handshake, sasl_plain_authenticate

from kafka_spark.local.kafka import SASL_USERS
from kafka_spark.protocol import ApiKey

USER, PASSWORD = next(iter(SASL_USERS.items()))


def _sasl(kafka: Any) -> BrokerWire:
    return BrokerWire(kafka.address("SASL_PLAINTEXT"))


@pytest.mark.parametrize("version", [0, 1])
def test_handshake_accepts_plain_and_lists_every_mechanism(kafka: Any, version: int) -> None:
    with _sasl(kafka) as wire:
        check("sasl-handshake", sasl_handshake(wire, version, "PLAIN").body, version, {})


@pytest.mark.parametrize("version", [0, 1])
def test_handshake_refuses_an_unknown_mechanism(kafka: Any, version: int) -> None:
    with _sasl(kafka) as wire:
        check("sasl-handshake-unsupported", sasl_handshake(wire, version, "GSSAPI").body, version, {})


@pytest.mark.parametrize("version", [0, 1, 2])
def test_plain_authentication_then_a_request_on_the_same_connection(kafka: Any, version: int) -> None:
    port = kafka.listeners["SASL_PLAINTEXT"]
    with _sasl(kafka) as wire:
        sasl_handshake(wire, 1, "PLAIN")
        check("sasl-authenticate", sasl_plain_authenticate(wire, version, USER, PASSWORD).body, version, {})
        # an authenticated session answers ordinary requests; brokers list this listener's address
        body = wire.call(ApiKey.METADATA, 12, {"topics": []})
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == [(kafka.node_id, HOST, port)]


@pytest.mark.parametrize("version", [0, 2])
def test_wrong_password_is_refused_with_a_message(kafka: Any, version: int) -> None:
    wrong = "not-" + PASSWORD
    with _sasl(kafka) as wire:
        sasl_handshake(wire, 1, "PLAIN")
        body = sasl_plain_authenticate(wire, version, USER, wrong).body
    check("sasl-authenticate-wrong-password", body, version, {"password": wrong})
