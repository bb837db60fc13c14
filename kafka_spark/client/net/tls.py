"""TLS contexts from the Java client's ssl.* properties (PEM trust and key material), and typed errors for
the certificates a TLS handshake refuses."""

from __future__ import annotations

import ssl

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import AuthenticationError, ConfigError
from kafka_spark.tls_keys import TlsSettings, client_context

# TLS alerts by which a broker refuses the client's certificate, or its lack of one.
_CERTIFICATE_ALERTS = frozenset({
    "BAD_CERTIFICATE", "CERTIFICATE_UNKNOWN", "UNKNOWN_CA", "CERTIFICATE_REQUIRED", "UNSUPPORTED_CERTIFICATE",
    "CERTIFICATE_EXPIRED", "CERTIFICATE_REVOKED", "ACCESS_DENIED",
})


def ssl_context(config: ClientConfig) -> ssl.SSLContext:
    """A client context: the configured CA (else the system's), optional client certificate, hostname check."""
    tls = TlsSettings(config.ssl_truststore_location, config.ssl_truststore_certificates,
                      config.ssl_keystore_location, config.ssl_keystore_key, config.ssl_keystore_certificate_chain,
                      config.ssl_key_password or config.ssl_keystore_password, config.ssl_cipher_suites)
    return client_context(tls, check_hostname=config.ssl_endpoint_identification_algorithm == "https",
                          error=ConfigError)


def presents_certificate(config: ClientConfig) -> bool:
    """True when the configuration holds a client certificate to show to brokers."""
    return bool(config.ssl_keystore_location or config.ssl_keystore_key)


def certificate_error(exc: OSError, broker: str, config: ClientConfig) -> AuthenticationError | None:
    """The `AuthenticationError` for a TLS failure about a certificate (the broker's or ours), else None.

    A broker refuses a client certificate with an alert; under TLS 1.3 it arrives after the handshake,
    on the first read, so both the handshake and the socket reads pass their failures through here.
    """
    if isinstance(exc, ssl.SSLCertVerificationError):
        return AuthenticationError(f"TLS: the certificate of broker {broker} does not verify: {exc.verify_message}")
    reason = exc.reason if isinstance(exc, ssl.SSLError) else None
    alert = (reason or "").partition("_ALERT_")[2]
    if alert not in _CERTIFICATE_ALERTS:
        return None
    if not presents_certificate(config):
        return AuthenticationError(f"TLS: broker {broker} requires a client certificate (alert {alert.lower()}); "
                                   "set ssl.keystore.location to a PEM file with the certificate and its key")
    return AuthenticationError(f"TLS: broker {broker} refused our client certificate (alert {alert.lower()}); "
                               "it must be signed by a CA the broker trusts, be valid now and allow clientAuth")
