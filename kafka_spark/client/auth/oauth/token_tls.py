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
import ssl
from collections.abc import Mapping

from kafka_spark.errors import ConfigError
from kafka_spark.tls_keys import TlsSettings, client_context, readable

_WHERE = "sasl.jaas.config option"
_USED = ("ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.type", "ssl.keystore.location",
         "ssl.keystore.type", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.keystore.password",
         "ssl.key.password", "ssl.cipher.suites", "ssl.endpoint.identification.algorithm")
# Java's client-side SSL settings that Python's ssl module has no use for; accepted so JAAS texts can be shared
_IGNORED = ("ssl.truststore.password", "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm",
            "ssl.trustmanager.algorithm", "ssl.secure.random.implementation", "ssl.provider",
            "ssl.engine.factory.class")


# The token endpoint's TLS options; the key material and its password are kept out of `repr`.
TokenTls = TlsSettings


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
        if path:
            readable(path, f"{_WHERE} {key}", ConfigError)


def token_endpoint_context(tls: TokenTls) -> ssl.SSLContext:
    """A client context for the token endpoint: its CAs (else the system's), its client certificate, and always
    a host name check."""
    check_token_tls(tls)
    return client_context(tls, check_hostname=True, error=ConfigError, where=_WHERE)
