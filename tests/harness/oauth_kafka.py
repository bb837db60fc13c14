"""A Kafka 4.x node with SASL/OAUTHBEARER listeners, for the OAUTHBEARER tests.

- `SASL_PLAINTEXT_UNSECURED`: Kafka's default validator of unsecured (`alg: none`) tokens; it wants scope `kafka`.
- `SASL_PLAINTEXT_REAUTH`: the same, with sessions of `reauth_ms`, so clients must re-authenticate (KIP-368).
- `SASL_PLAINTEXT_OIDC`: signed JWTs from the OAuth server, checked by `OAuthBearerValidatorCallbackHandler`
  against its JWKS, issuer and audience; sessions also end after `reauth_ms`.

Inter-broker and controller traffic stays on PLAINTEXT, so the broker itself needs no token.
"""

from __future__ import annotations

from pathlib import Path

from harness.oauth_server import AUDIENCE, SCOPE, OAuthServer
from kafka_spark.local.kafka import KafkaNode, start_kafka

UNSECURED = "SASL_PLAINTEXT_UNSECURED"
REAUTH = "SASL_PLAINTEXT_REAUTH"
OIDC = "SASL_PLAINTEXT_OIDC"
OAUTH_LISTENERS = (UNSECURED, REAUTH, OIDC)

_OAUTH_PKG = "org.apache.kafka.common.security.oauthbearer"
_LOGIN_MODULE = f"{_OAUTH_PKG}.OAuthBearerLoginModule required"
# Kafka 4 reaches no OAuth URL that this JVM system property does not list (exact strings)
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
# its DEBUG lines include "Beginning re-authentication", the broker's own record of a KIP-368 re-authentication
AUTHENTICATOR_LOGGER = "org.apache.kafka.common.security.authenticator.SaslServerAuthenticator"
REAUTH_LOG_LINE = "Beginning re-authentication"


def _listener(name: str, jaas: str, reauth_ms: int) -> dict[str, object]:
    prefix = f"listener.name.{name.lower()}"
    props: dict[str, object] = {
        f"{prefix}.sasl.enabled.mechanisms": "OAUTHBEARER",
        f"{prefix}.oauthbearer.sasl.jaas.config": jaas,
    }
    if reauth_ms:
        props[f"{prefix}.oauthbearer.connections.max.reauth.ms"] = reauth_ms
    return props


def unsecured_listener(name: str, reauth_ms: int = 0) -> dict[str, object]:
    """Broker properties of a listener that accepts Kafka's unsecured tokens carrying scope `kafka`."""
    # the broker's own login makes a token from these options too (it never sends it): it needs a subject
    jaas = (f'{_LOGIN_MODULE} unsecuredLoginStringClaim_sub="broker" unsecuredValidatorRequiredScope="{SCOPE}" '
            'unsecuredValidatorAllowableClockSkewMs="1000";')
    return _listener(name, jaas, reauth_ms)


def oidc_listener(name: str, server: OAuthServer, reauth_ms: int = 0) -> dict[str, object]:
    """Broker properties of a listener that accepts only JWTs signed by `server` for the test audience."""
    props = _listener(name, f"{_LOGIN_MODULE} ;", reauth_ms)
    props[f"listener.name.{name.lower()}.oauthbearer.sasl.server.callback.handler.class"] = (
        f"{_OAUTH_PKG}.OAuthBearerValidatorCallbackHandler")
    # Kafka 4.1.1's handler makes its default validator (DefaultJwtValidator) without the JWKS key resolver, so
    # that validator falls back to the client-side checks: no signature, issuer or audience check (a forged
    # token was accepted). The broker validator, named explicitly, builds its resolver from the JWKS URL.
    props["sasl.oauthbearer.jwt.validator.class"] = f"{_OAUTH_PKG}.BrokerJwtValidator"
    # broker-wide: only this listener's validator reads them
    props.update({
        "sasl.oauthbearer.jwks.endpoint.url": server.jwks_url,
        "sasl.oauthbearer.expected.issuer": server.issuer_url,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
    })
    return props


def start_oauth_kafka(data_dir: Path, server: OAuthServer, reauth_ms: int = 4000, timeout: float = 90.0) -> KafkaNode:
    """A single node with PLAINTEXT and the three OAUTHBEARER listeners above."""
    extra = {**unsecured_listener(UNSECURED), **unsecured_listener(REAUTH, reauth_ms),
             **oidc_listener(OIDC, server, reauth_ms)}
    return start_kafka(data_dir, secure=False, extra=extra, timeout=timeout, listeners=OAUTH_LISTENERS,
                       jvm_props=(f"-D{ALLOWED_URLS_PROPERTY}={server.token_url},{server.jwks_url}",),
                       log_levels={AUTHENTICATOR_LOGGER: "DEBUG"})


def reauthentications(node: KafkaNode) -> int:
    """How many KIP-368 re-authentications the node has begun so far (from its log)."""
    try:
        text = node.log_path.read_text(errors="replace")
    except FileNotFoundError:
        return 0
    return text.count(REAUTH_LOG_LINE)
