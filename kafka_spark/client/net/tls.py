"""TLS contexts from the Java client's ssl.* properties (PEM trust and key material), and typed errors for
the certificates a TLS handshake refuses."""

from __future__ import annotations

import os
import ssl
import tempfile

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import AuthenticationError, ConfigError
from kafka_spark.tls_keys import load_key_pair

# TLS alerts by which a broker refuses the client's certificate, or its lack of one.
_CERTIFICATE_ALERTS = frozenset({
    "BAD_CERTIFICATE", "CERTIFICATE_UNKNOWN", "UNKNOWN_CA", "CERTIFICATE_REQUIRED", "UNSUPPORTED_CERTIFICATE",
    "CERTIFICATE_EXPIRED", "CERTIFICATE_REVOKED", "ACCESS_DENIED",
})


def ssl_context(config: ClientConfig) -> ssl.SSLContext:
    """A client context: the configured CA (else the system's), optional client certificate, hostname check."""
    if config.ssl_truststore_location and config.ssl_truststore_certificates:
        raise ConfigError("set ssl.truststore.location or ssl.truststore.certificates, not both")
    try:
        if config.ssl_truststore_location:
            _readable(config.ssl_truststore_location, "ssl.truststore.location")
            context = ssl.create_default_context(cafile=config.ssl_truststore_location)
        elif config.ssl_truststore_certificates:
            context = ssl.create_default_context(cadata=config.ssl_truststore_certificates)
        else:
            context = ssl.create_default_context()
    except ssl.SSLError as exc:
        raise ConfigError(f"ssl.truststore: not a readable PEM certificate list ({exc.reason})") from None
    context.check_hostname = config.ssl_endpoint_identification_algorithm == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    if config.ssl_cipher_suites:
        try:
            context.set_ciphers(config.ssl_cipher_suites)
        except ssl.SSLError:
            raise ConfigError(f"ssl.cipher.suites: no usable cipher in {config.ssl_cipher_suites!r}") from None
    _load_client_certificate(context, config)
    return context


def _readable(path: str, key: str) -> None:
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise ConfigError(f"{key}: {path} is not a readable file")


def _load_client_certificate(context: ssl.SSLContext, config: ClientConfig) -> None:
    if config.ssl_keystore_location:
        _readable(config.ssl_keystore_location, "ssl.keystore.location")
        # one PEM file holding the certificate chain and the private key
        _load_pem(context, config.ssl_keystore_location, "ssl.keystore.location", config)
    elif config.ssl_keystore_key or config.ssl_keystore_certificate_chain:
        if not (config.ssl_keystore_key and config.ssl_keystore_certificate_chain):
            raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain go together")
        # ssl only loads key material from files: write a private temporary file, then delete it
        fd, path = tempfile.mkstemp(suffix=".pem")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(config.ssl_keystore_certificate_chain.strip() + "\n" + config.ssl_keystore_key.strip() + "\n")
            _load_pem(context, path, "ssl.keystore.key", config)
        finally:
            os.unlink(path)


def _load_pem(context: ssl.SSLContext, path: str, key: str, config: ClientConfig) -> None:
    load_key_pair(context, path, None, config.ssl_key_password or config.ssl_keystore_password, setting=key,
                  password_setting="ssl.key.password", error=ConfigError)


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
