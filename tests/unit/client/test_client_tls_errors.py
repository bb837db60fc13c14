"""Which TLS failures become AuthenticationError, and what the message tells the user to do."""

from __future__ import annotations

import ssl

import pytest

from kafka_spark.client.config import ClientConfig
from kafka_spark.client.net.tls import certificate_error
from kafka_spark.errors import AuthenticationError

BROKER = "127.0.0.1:9093"


def _config(**extra: str) -> ClientConfig:
    return ClientConfig({"bootstrap.servers": BROKER, "security.protocol": "SSL", **extra})


def _alert(reason: str) -> ssl.SSLError:
    exc = ssl.SSLError(1, f"[SSL: {reason}] alert")
    exc.reason = reason  # set by OpenSSL on real failures; the mapping reads only this
    return exc


@pytest.mark.parametrize("reason", ["SSLV3_ALERT_BAD_CERTIFICATE", "TLSV13_ALERT_CERTIFICATE_REQUIRED",
                                    "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "TLSV1_ALERT_UNKNOWN_CA"])
def test_certificate_alerts_say_whether_a_certificate_was_sent(reason: str, tmp_path) -> None:
    without = certificate_error(_alert(reason), BROKER, _config())
    assert isinstance(without, AuthenticationError) and "set ssl.keystore.location" in str(without)
    pem = tmp_path / "client.pem"
    pem.write_text("unused: only the presence of a keystore matters here")
    with_cert = certificate_error(_alert(reason), BROKER, _config(
        **{"ssl.keystore.location": str(pem)}))
    assert isinstance(with_cert, AuthenticationError) and "refused our client certificate" in str(with_cert)
    assert BROKER in str(with_cert)


@pytest.mark.parametrize("reason", ["WRONG_VERSION_NUMBER", "TLSV1_ALERT_PROTOCOL_VERSION", None])
def test_other_tls_failures_are_left_to_the_caller(reason: str | None) -> None:
    exc = _alert(reason) if reason else ConnectionResetError(104, "reset")
    assert certificate_error(exc, BROKER, _config()) is None


def test_an_unverifiable_broker_certificate_names_the_reason() -> None:
    exc = ssl.SSLCertVerificationError(1, "verify failed")
    exc.verify_message = "unable to get local issuer certificate"
    err = certificate_error(exc, BROKER, _config())
    assert isinstance(err, AuthenticationError) and "unable to get local issuer certificate" in str(err)
