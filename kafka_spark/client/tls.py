"""TLS contexts from the Java client's ssl.* properties (PEM trust and key material)."""

from __future__ import annotations

import os
import ssl
import tempfile

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError


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
    password = config.ssl_key_password or config.ssl_keystore_password
    if config.ssl_keystore_location:
        _readable(config.ssl_keystore_location, "ssl.keystore.location")
        try:
            # one PEM file holding the certificate chain and the private key
            context.load_cert_chain(config.ssl_keystore_location, password=password)
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.keystore.location: cannot load a PEM certificate and key ({exc.reason}); "
                              "check ssl.key.password") from None
    elif config.ssl_keystore_key or config.ssl_keystore_certificate_chain:
        if not (config.ssl_keystore_key and config.ssl_keystore_certificate_chain):
            raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain go together")
        # ssl only loads key material from files: write a private temporary file, then delete it
        fd, path = tempfile.mkstemp(suffix=".pem")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(config.ssl_keystore_certificate_chain.strip() + "\n" + config.ssl_keystore_key.strip() + "\n")
            context.load_cert_chain(path, password=password)
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.keystore.key: cannot load the PEM key and chain ({exc.reason})") from None
        finally:
            os.unlink(path)
