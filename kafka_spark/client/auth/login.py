"""Which SASL login a configuration asks for, under the Java client's names, and its mechanism per connection.

The Java class names users already have in `sasl.login.callback.handler.class`,
`sasl.client.callback.handler.class` and `sasl.jaas.config` select the same behaviour here:

| configuration | login |
|---|---|
| PLAIN / SCRAM-SHA-* | user name and password |
| OAUTHBEARER, no handler | Kafka's unsecured test token (`unsecuredLogin*` JAAS options) |
| OAUTHBEARER, Kafka's `OAuthBearerLoginCallbackHandler` | OIDC client credentials or a token file (KIP-768) |
| OAUTHBEARER, `IAMOAuthBearerLoginCallbackHandler` | AWS MSK IAM token |
| OAUTHBEARER, `GcpLoginCallbackHandler` | Google application default credentials |
| OAUTHBEARER, ``module:function`` | a Python hook |
| AWS_MSK_IAM (`IAMLoginModule`) | AWS MSK IAM signed payload |
| GSSAPI (`Krb5LoginModule`) | Kerberos keytab or ticket cache |

Anything else is a one-line `ConfigError` naming the option.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from kafka_spark.client.auth.mechanism import Mechanism
from kafka_spark.client.auth.oauth import cloud_tokens
from kafka_spark.client.auth.oauth.jwt_assertion import GRANT_TYPE as JWT_BEARER_GRANT
from kafka_spark.client.auth.oauth.jwt_assertion import AssertionSettings, make_assertion
from kafka_spark.client.auth.oauth.oauthbearer import (
    OAuthBearerMechanism,
    check_extensions,
    jwt_claims,
    unsecured_token,
)
from kafka_spark.client.auth.oauth.token_endpoint import TokenEndpointError, TokenRequest, fetch_token, safe_url
from kafka_spark.client.auth.oauth.token_tls import check_token_tls, token_endpoint_context, token_tls
from kafka_spark.client.auth.oauth.tokens import RefreshingToken, RefreshRules, Token, shared
from kafka_spark.client.auth.plain_scram import make_mechanism
from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import AuthenticationError, ConfigError

_OAUTH_PKG = "org.apache.kafka.common.security.oauthbearer"
KAFKA_OIDC_HANDLERS = frozenset({f"{_OAUTH_PKG}.OAuthBearerLoginCallbackHandler",
                                 f"{_OAUTH_PKG}.secured.OAuthBearerLoginCallbackHandler"})
KAFKA_UNSECURED_HANDLER = f"{_OAUTH_PKG}.internals.unsecured.OAuthBearerUnsecuredLoginCallbackHandler"
MSK_OAUTH_HANDLERS = frozenset({"software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
                                "com.amazonaws.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"})
MSK_CLIENT_HANDLERS = frozenset({"software.amazon.msk.auth.iam.IAMClientCallbackHandler",
                                 "com.amazonaws.msk.auth.iam.IAMClientCallbackHandler"})
GOOGLE_HANDLER = "com.google.cloud.hosted.kafka.auth.GcpLoginCallbackHandler"
# Kafka 4.1's retrievers (sasl.oauthbearer.jwt.retriever.class)
RETRIEVERS = {f"{_OAUTH_PKG}.{name}": name for name in
              ("DefaultJwtRetriever", "ClientCredentialsJwtRetriever", "FileJwtRetriever", "JwtBearerJwtRetriever")}
# Client callback handlers that only carry the login's credential: what this client does anyway
_PASSIVE_CLIENT_HANDLERS = frozenset({f"{_OAUTH_PKG}.internals.OAuthBearerSaslClientCallbackHandler",
                                      *MSK_OAUTH_HANDLERS, *MSK_CLIENT_HANDLERS})
_LOGIN_CLASSES = frozenset({f"{_OAUTH_PKG}.internals.OAuthBearerRefreshingLogin",
                            "org.apache.kafka.common.security.kerberos.KerberosLogin",
                            "org.apache.kafka.common.security.authenticator.DefaultLogin"})


def _handler(config: ClientConfig) -> str | None:
    handler = config.sasl_login_callback_handler_class
    return handler.strip() if handler and handler.strip() else None


def login_config(properties: Mapping[str, Any]) -> ClientConfig:
    """`properties` as a client configuration whose SASL login this client can honour (checked with no I/O)."""
    config = ClientConfig(properties)
    if config.uses_sasl:
        check_login(config)
    return config


def check_login(config: ClientConfig) -> None:
    """Refuse a login configuration this client cannot honour, naming the option; no network."""
    mechanism = config.sasl_mechanism
    options = config.jaas_options()
    if config.sasl_login_class and config.sasl_login_class.strip() not in _LOGIN_CLASSES:
        raise ConfigError(f"sasl.login.class={config.sasl_login_class} is not supported; leave it unset")
    client_handler = (config.sasl_client_callback_handler_class or "").strip()
    if client_handler and client_handler not in _PASSIVE_CLIENT_HANDLERS:
        raise ConfigError(f"sasl.client.callback.handler.class={client_handler} is not supported; leave it unset")
    handler = _handler(config)
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        if handler:
            raise ConfigError(f"sasl.login.callback.handler.class does not apply to sasl.mechanism={mechanism}")
        config.sasl_credentials()
    elif mechanism == "OAUTHBEARER":
        _check_oauthbearer(config, options, handler)
    elif mechanism == "GSSAPI":
        if not config.sasl_kerberos_service_name:
            raise ConfigError("sasl.mechanism=GSSAPI needs sasl.kerberos.service.name (the broker principal's "
                              "service, e.g. kafka)")
        from kafka_spark.client.auth.gssapi.credentials import kerberos_login, load_gssapi

        kerberos_login(config)  # keyTab readable, principal named, no password prompt
        load_gssapi()  # the missing extra fails here, at configuration, not at the first connection
    elif mechanism == "AWS_MSK_IAM" and not config.uses_tls:
        raise ConfigError("sasl.mechanism=AWS_MSK_IAM needs security.protocol=SASL_SSL")


def _check_oauthbearer(config: ClientConfig, options: dict[str, str], handler: str | None) -> None:
    if handler is None or handler == KAFKA_UNSECURED_HANDLER:
        if not any(k.startswith("unsecuredLogin") for k in options):
            raise ConfigError("sasl.mechanism=OAUTHBEARER without sasl.login.callback.handler.class makes Kafka's "
                              "unsecured test token: set unsecuredLoginStringClaim_sub in sasl.jaas.config, or set "
                              f"sasl.login.callback.handler.class={sorted(KAFKA_OIDC_HANDLERS)[0]} and "
                              "sasl.oauthbearer.token.endpoint.url for OIDC")
        unsecured_token({k: v for k, v in options.items()})  # validates claims and extensions
    elif handler in KAFKA_OIDC_HANDLERS:
        retriever = _retriever(config)
        url = config.sasl_oauthbearer_token_endpoint_url
        if not url:
            raise ConfigError(f"sasl.login.callback.handler.class={handler} needs sasl.oauthbearer.token.endpoint.url")
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme not in ("http", "https", "file"):
            raise ConfigError(f"sasl.oauthbearer.token.endpoint.url must be http(s):// or file:, got {scheme!r}")
        if retriever == "FileJwtRetriever" and scheme != "file":
            raise ConfigError("sasl.oauthbearer.jwt.retriever.class=FileJwtRetriever needs a file: token URL")
        if retriever == "JwtBearerJwtRetriever":
            if scheme == "file":
                raise ConfigError("sasl.oauthbearer.jwt.retriever.class=JwtBearerJwtRetriever needs an http(s) "
                                  "sasl.oauthbearer.token.endpoint.url")
            assertion_settings(config).check()
        elif scheme != "file":
            client_id, secret, _ = _client_credentials(config, options)
            if not client_id or not secret:
                raise ConfigError("OIDC client credentials need sasl.oauthbearer.client.credentials.client.id and "
                                  ".client.secret (or clientId and clientSecret in sasl.jaas.config)")
        check_extensions(_extensions(options, "extension_"), "extension_")
        check_token_tls(token_tls(options))
    elif handler in MSK_OAUTH_HANDLERS or handler == GOOGLE_HANDLER:
        pass
    elif ":" in handler:
        cloud_tokens.load_hook(handler)
    else:
        raise ConfigError(f"sasl.login.callback.handler.class={handler} is not a login this client knows; use "
                          f"Kafka's OAuthBearerLoginCallbackHandler, aws-msk-iam-auth's, Google's, or a Python hook "
                          "'module:function'")


def _retriever(config: ClientConfig) -> str:
    name = (config.sasl_oauthbearer_jwt_retriever_class or "").strip()
    if not name:
        return "DefaultJwtRetriever"
    if name not in RETRIEVERS:
        raise ConfigError(f"sasl.oauthbearer.jwt.retriever.class={name} is not supported; use one of "
                          f"{', '.join(sorted(RETRIEVERS))}")
    return RETRIEVERS[name]


def _client_credentials(config: ClientConfig, options: dict[str, str]) -> tuple[str, str, str]:
    # Kafka 4.1's properties win over the JAAS options they replace
    client_id = config.sasl_oauthbearer_client_id or options.get("clientId", "")
    secret = config.sasl_oauthbearer_client_secret or options.get("clientSecret", "")
    scope = config.sasl_oauthbearer_scope or options.get("scope", "")
    return client_id.strip(), secret.strip(), scope.strip()


def _extensions(options: dict[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: v for k, v in options.items() if k.startswith(prefix)}


def _rules(config: ClientConfig) -> RefreshRules:
    return RefreshRules(config.sasl_login_refresh_window_factor, config.sasl_login_refresh_window_jitter,
                        float(config.sasl_login_refresh_min_period_seconds),
                        float(config.sasl_login_refresh_buffer_seconds))


def assertion_settings(config: ClientConfig) -> AssertionSettings:
    """Kafka 4.1's `sasl.oauthbearer.assertion.*` settings of the jwt-bearer grant."""
    return AssertionSettings(
        config.sasl_oauthbearer_assertion_file, config.sasl_oauthbearer_assertion_algorithm,
        config.sasl_oauthbearer_assertion_claim_aud, config.sasl_oauthbearer_assertion_claim_iss,
        config.sasl_oauthbearer_assertion_claim_sub, config.sasl_oauthbearer_assertion_claim_exp_seconds,
        config.sasl_oauthbearer_assertion_claim_nbf_seconds, config.sasl_oauthbearer_assertion_claim_jti_include,
        config.sasl_oauthbearer_assertion_private_key_file, config.sasl_oauthbearer_assertion_private_key_passphrase,
        config.sasl_oauthbearer_assertion_template_file)


def _oidc_token(config: ClientConfig, options: dict[str, str]) -> Token:
    url = config.sasl_oauthbearer_token_endpoint_url or ""
    client_id, secret, scope = _client_credentials(config, options)
    extra_form: dict[str, str] = {}
    if _retriever(config) == "JwtBearerJwtRetriever":
        # RFC 7523: the signed assertion authenticates the grant; Kafka 4.1 sends no client credentials with it,
        # and neither do we unless they are configured (authorization servers that require client
        # authentication for this grant, as many do, then get it)
        extra_form = {"grant_type": JWT_BEARER_GRANT, "assertion": make_assertion(assertion_settings(config))}
    request = TokenRequest(url, client_id, secret, scope, config.sasl_login_connect_timeout_ms / 1000,
                           config.sasl_login_read_timeout_ms / 1000, config.sasl_login_retry_backoff_ms / 1000,
                           config.sasl_login_retry_backoff_max_ms / 1000,
                           config.sasl_oauthbearer_header_urlencode, extra_form)
    # the endpoint's own TLS options, never the brokers' (client/auth/oauth/token_tls.py says why)
    https = urllib.parse.urlsplit(url).scheme == "https"
    value = fetch_token(request, token_endpoint_context(token_tls(options)) if https else None)
    return _validated(value, config, _extensions(options, "extension_"), f"the token from {safe_url(url)}")


def _login_name(handler: str | None) -> str:
    # short names for messages: the handler's class, not its package
    if handler is None or handler == KAFKA_UNSECURED_HANDLER:
        return "unsecured token"
    if handler in KAFKA_OIDC_HANDLERS:
        return "OIDC"
    return handler.rsplit(".", 1)[-1]


def _validated(value: str, config: ClientConfig, extensions: dict[str, str], what: str) -> Token:
    """Java's client-side checks of a fetched token: a JWT with `exp` and the subject claim."""
    claims = jwt_claims(value)
    if not claims:
        raise TokenEndpointError(f"{what} is not a JWT (three base64url parts with a JSON payload)")
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, (int, float)) or isinstance(exp, bool) or exp < 0:
        raise TokenEndpointError(f"{what} has no valid exp claim")
    sub_name = config.sasl_oauthbearer_sub_claim_name
    sub = claims.get(sub_name)
    if not isinstance(sub, str) or not sub.strip():
        raise TokenEndpointError(f"{what} has no {sub_name} claim (sasl.oauthbearer.sub.claim.name)")
    issued = float(iat) if isinstance(iat, (int, float)) and not isinstance(iat, bool) else time.time()
    return Token(value, float(exp), issued, check_extensions(extensions, "extension_"), sub)


def token_source(config: ClientConfig, host: str) -> RefreshingToken:
    """The process's refreshing token for this OAUTHBEARER login."""
    options = config.jaas_options()
    handler = _handler(config)
    hook_options = {**options, "bootstrap.servers": ",".join(f"{h}:{p}" for h, p in config.bootstrap_servers)}

    def fetch() -> Token:
        if handler is None or handler == KAFKA_UNSECURED_HANDLER:
            value, expires, extensions = unsecured_token(options)
            return Token(value, expires, time.time(), extensions)
        if handler in KAFKA_OIDC_HANDLERS:
            return _oidc_token(config, options)
        if handler in MSK_OAUTH_HANDLERS:
            return cloud_tokens.msk_iam_token(options, host)
        if handler == GOOGLE_HANDLER:
            return cloud_tokens.google_token(options)
        return cloud_tokens.hook_token(handler, hook_options)

    key = {k: v for k, v in config.properties(redact=False).items() if k.startswith("sasl.") or k.startswith("ssl.")}
    if handler in MSK_OAUTH_HANDLERS:
        key["region-host"] = cloud_tokens.region_of_host(host) or ""
    return shared(key, lambda: RefreshingToken(fetch, _rules(config), f"OAUTHBEARER login ({_login_name(handler)})"))


class _OneMessage:
    """A mechanism with one client message and a non-empty server answer (AWS_MSK_IAM)."""

    def __init__(self, name: str, message: bytes) -> None:
        self.name = name
        self._message = message

    def first(self) -> bytes:
        return self._message

    def respond(self, challenge: bytes) -> bytes | None:
        if not challenge:
            raise AuthenticationError(f"{self.name}: the broker answered nothing")
        try:
            json.loads(challenge)
        except ValueError:
            raise AuthenticationError(f"{self.name}: the broker's answer is not JSON") from None
        return None

    def __repr__(self) -> str:
        return f"{self.name} mechanism (payload hidden)"


def mechanism_for(config: ClientConfig, host: str) -> Mechanism:
    """A fresh client mechanism for one (re-)authentication with the broker at `host`."""
    name = config.sasl_mechanism
    if name == "OAUTHBEARER":
        token = token_source(config, host).current()
        return OAuthBearerMechanism(token.value, token.extensions)
    if name == "GSSAPI":
        from kafka_spark.client.auth.gssapi.mechanism import gssapi_mechanism

        return gssapi_mechanism(config, host)
    if name == "AWS_MSK_IAM":
        return _OneMessage(name, cloud_tokens.msk_iam_payload(config.jaas_options(), host))
    username, password = config.sasl_credentials()
    return make_mechanism(name, username, password)

