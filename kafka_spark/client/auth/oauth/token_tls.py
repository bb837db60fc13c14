"""TLS toward the OAuth token endpoint, kept apart from the brokers' TLS.

As in Java's client (its `JaasOptionsUtils`), the token endpoint's trust and client certificate come from the
``ssl.*`` options inside the `OAuthBearerLoginModule`'s `sasl.jaas.config`, never from the client's own ``ssl.*``
properties: a private broker CA would otherwise replace the public roots an identity provider is signed by, and
``ssl.endpoint.identification.algorithm=`` (brokers reached by IP address) would hand the client secret to any
host holding a certificate from that CA. Without those options the system's CAs are trusted, as the JDK's are.
The host name is always checked, whatever the options say: the secret travels in the first request.
"""

from __future__ import annotations

import difflib
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_spark.errors import ConfigError
from kafka_spark.tls_keys import load_key_pair

_WHERE = "sasl.jaas.config option"
_USED = ("ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.type", "ssl.keystore.location",
         "ssl.keystore.type", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.keystore.password",
         "ssl.key.password", "ssl.cipher.suites", "ssl.endpoint.identification.algorithm")
# Java's client-side SSL settings that Python's ssl module has no use for; accepted so JAAS texts can be shared
_IGNORED = ("ssl.truststore.password", "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm",
            "ssl.trustmanager.algorithm", "ssl.secure.random.implementation", "ssl.provider",
            "ssl.engine.factory.class")


@dataclass(frozen=True)
class TokenTls:
    """The token endpoint's TLS options; the key material and its password are kept out of `repr`."""

    truststore_location: str | None = None
    truststore_certificates: str | None = field(default=None, repr=False)
    keystore_location: str | None = None
    keystore_key: str | None = field(default=None, repr=False)
    keystore_certificate_chain: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    cipher_suites: str | None = None


def token_tls(options: Mapping[str, str]) -> TokenTls:
    """The token endpoint's TLS settings among the JAAS `options`; `ConfigError` naming a wrong one, no I/O."""
    given = {k: v.strip() for k, v in options.items() if k.startswith("ssl.")}
    for key in given:
        if key not in _USED and key not in _IGNORED:
            close = difflib.get_close_matches(key, _USED, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(f"{_WHERE} {key} is not a TLS setting of the token endpoint{hint}")
    for key in ("ssl.truststore.type", "ssl.keystore.type"):
        if given.get(key, "PEM").upper() != "PEM":
            raise ConfigError(f"{_WHERE} {key}={given[key]}: only PEM is read (Python's ssl reads no JKS or PKCS12)")
    if given.get("ssl.endpoint.identification.algorithm", "https").lower() != "https":
        raise ConfigError(f"{_WHERE} ssl.endpoint.identification.algorithm: the token endpoint's host name is "
                          "always checked against its certificate; remove the option")
    if given.get("ssl.truststore.location") and given.get("ssl.truststore.certificates"):
        raise ConfigError(f"{_WHERE}s ssl.truststore.location and ssl.truststore.certificates: set one, not both")
    key, chain = given.get("ssl.keystore.key", ""), given.get("ssl.keystore.certificate.chain", "")
    if bool(key) != bool(chain):
        raise ConfigError(f"{_WHERE}s ssl.keystore.key and ssl.keystore.certificate.chain go together")
    if key and given.get("ssl.keystore.location"):
        raise ConfigError(f"{_WHERE}s ssl.keystore.location and ssl.keystore.key: set one, not both")
    return TokenTls(given.get("ssl.truststore.location") or None, given.get("ssl.truststore.certificates") or None,
                    given.get("ssl.keystore.location") or None, key or None, chain or None,
                    given.get("ssl.key.password") or given.get("ssl.keystore.password") or None,
                    given.get("ssl.cipher.suites") or None)


def check_token_tls(tls: TokenTls) -> None:
    """Refuse files that cannot be read, at configuration time rather than at the first token fetch."""
    for key, path in (("ssl.truststore.location", tls.truststore_location),
                      ("ssl.keystore.location", tls.keystore_location)):
        if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise ConfigError(f"{_WHERE} {key}: {path} is not a readable file")


def token_endpoint_context(tls: TokenTls) -> ssl.SSLContext:
    """A client context for the token endpoint: its CAs (else the system's), its client certificate, and always
    a host name check."""
    check_token_tls(tls)
    try:
        if tls.truststore_location:
            context = ssl.create_default_context(cafile=tls.truststore_location)
        elif tls.truststore_certificates:
            context = ssl.create_default_context(cadata=tls.truststore_certificates)
        else:
            context = ssl.create_default_context()
    except ssl.SSLError as exc:
        raise ConfigError(f"{_WHERE} ssl.truststore: not a readable PEM certificate list ({exc.reason})") from None
    # create_default_context does both already; stated so that no later change to the defaults can loosen them
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    if tls.cipher_suites:
        try:
            context.set_ciphers(tls.cipher_suites)
        except ssl.SSLError:
            raise ConfigError(f"{_WHERE} ssl.cipher.suites: no usable cipher in {tls.cipher_suites!r}") from None
    if tls.keystore_location:
        _load_key_pair(context, tls.keystore_location, "ssl.keystore.location", tls.key_password)
    elif tls.keystore_key and tls.keystore_certificate_chain:
        # ssl loads key material only from files: a private temporary file, deleted at once
        fd, path = tempfile.mkstemp(suffix=".pem")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(tls.keystore_certificate_chain + "\n" + tls.keystore_key + "\n")
            _load_key_pair(context, path, "ssl.keystore.key", tls.key_password)
        finally:
            os.unlink(path)
    return context


def _load_key_pair(context: ssl.SSLContext, path: str, setting: str, password: str | None) -> None:
    load_key_pair(context, path, None, password, setting=f"{_WHERE} {setting}",
                  password_setting="ssl.key.password", error=ConfigError)
