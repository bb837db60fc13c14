"""TLS client contexts from Java-style `ssl.*` settings, and key loading without OpenSSL ever prompting.

Given no password, OpenSSL asks for an encrypted key's one on the terminal, which hangs a Spark executor (or
any process without a terminal) for good. Every TLS client of the package (brokers, the token endpoint, the
schema registry) loads its key through `load_key_pair`, which always hands OpenSSL a password callback.
Brokers and the token endpoint build their contexts from the same settings with `client_context`.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TlsSettings:
    """A TLS client's settings, as Java's `ssl.*` properties give them (PEM only)."""

    truststore_location: str | None = None
    truststore_certificates: str | None = field(default=None, repr=False)
    keystore_location: str | None = None
    keystore_key: str | None = field(default=None, repr=False)
    keystore_certificate_chain: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    cipher_suites: str | None = None


def client_context(tls: TlsSettings, check_hostname: bool, *, error: Callable[[str], Exception],
                   where: str = "") -> ssl.SSLContext:
    """A client context: the configured CAs (else the system's), the client certificate, the cipher suites;
    the peer's certificate always verified, its host name when `check_hostname`. `error(message)` names the
    setting, after `where` (the settings' place, such as the login module's options)."""
    prefix = f"{where} " if where else ""
    if tls.truststore_location and tls.truststore_certificates:
        raise error(f"{prefix}set ssl.truststore.location or ssl.truststore.certificates, not both")
    try:
        if tls.truststore_location:
            readable(tls.truststore_location, f"{prefix}ssl.truststore.location", error)
            context = ssl.create_default_context(cafile=tls.truststore_location)
        elif tls.truststore_certificates:
            context = ssl.create_default_context(cadata=tls.truststore_certificates)
        else:
            context = ssl.create_default_context()
    except ssl.SSLError as exc:
        raise error(f"{prefix}ssl.truststore: not a readable PEM certificate list ({exc.reason})") from None
    # stated although create_default_context sets them: no later change to its defaults can loosen them
    context.check_hostname = check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if tls.cipher_suites:
        try:
            context.set_ciphers(tls.cipher_suites)
        except ssl.SSLError:
            raise error(f"{prefix}ssl.cipher.suites: no usable cipher in {tls.cipher_suites!r}") from None
    _load_client_certificate(context, tls, prefix, error)
    return context


def readable(path: str, setting: str, error: Callable[[str], Exception]) -> None:
    """`error` naming `setting` unless `path` is a readable file."""
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise error(f"{setting}: {path} is not a readable file")


def _load_client_certificate(context: ssl.SSLContext, tls: TlsSettings, prefix: str,
                             error: Callable[[str], Exception]) -> None:
    def load(path: str, setting: str) -> None:
        load_key_pair(context, path, None, tls.key_password, setting=f"{prefix}{setting}",
                      password_setting="ssl.key.password", error=error)

    if tls.keystore_location:
        readable(tls.keystore_location, f"{prefix}ssl.keystore.location", error)
        load(tls.keystore_location, "ssl.keystore.location")  # one PEM file: the chain and the private key
    elif tls.keystore_key or tls.keystore_certificate_chain:
        if not (tls.keystore_key and tls.keystore_certificate_chain):
            raise error(f"{prefix}ssl.keystore.key and ssl.keystore.certificate.chain go together")
        # ssl loads key material only from files: a private temporary file, deleted at once
        fd, path = tempfile.mkstemp(suffix=".pem")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(tls.keystore_certificate_chain.strip() + "\n" + tls.keystore_key.strip() + "\n")
            load(path, "ssl.keystore.key")
        finally:
            os.unlink(path)


def load_key_pair(context: ssl.SSLContext, certificate: str, key: str | None, password: str | None, *,
                  setting: str, password_setting: str, error: Callable[[str], Exception]) -> None:
    """Load the PEM certificate chain at `certificate` and its private key (in `key`, or in the same file when
    None) into `context`, decrypting the key with `password` when it is encrypted.

    Failures raise `error(message)`, the message naming `setting` (the option that gave the files) and, for an
    encrypted key without a password or with a wrong one, `password_setting`; never the password itself.
    OSError when a file cannot be read.
    """
    asked = False

    def give_password() -> str:
        nonlocal asked
        asked = True
        if password is None:
            raise error(f"{setting}: the private key is encrypted; set {password_setting}")
        return password

    try:
        context.load_cert_chain(certificate, key, password=give_password)
    except ssl.SSLError as exc:
        if asked:
            raise error(f"{setting}: {password_setting} does not decrypt the private key") from None
        detail = exc.reason or "no certificate with its private key in it"
        raise error(f"{setting}: cannot load a PEM certificate chain and private key ({detail})") from None
