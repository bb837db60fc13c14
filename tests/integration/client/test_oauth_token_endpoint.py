"""The OIDC client-credentials flow against a real OAuth server (mock-oauth2-server): a signed JWT is fetched,
a wrong endpoint path and an unreachable endpoint fail with a typed error in the configured time, token files."""

from __future__ import annotations

import base64
import json
import time

import pytest
from harness.oauth import CLIENT_ID, CLIENT_SECRET, oidc
from harness.oauth_server import AUDIENCE, OTHER_AUDIENCE_SCOPE, SCOPE

from kafka_spark.client.auth.login import token_source
from kafka_spark.client.auth.oauth.oauthbearer import jwt_claims
from kafka_spark.client.auth.oauth.token_endpoint import TokenEndpointError, TokenRequest, fetch_token
from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import AuthenticationError
from kafka_spark.local.process import free_port


def test_client_credentials_token_is_a_signed_jwt_for_the_client(oauth_server):
    token = fetch_token(TokenRequest(oauth_server.token_url, CLIENT_ID, CLIENT_SECRET, SCOPE))
    header, _, signature = token.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==="))["alg"] == "RS256"
    assert signature  # signed, unlike Kafka's unsecured tokens
    claims = jwt_claims(token)
    # one audience is written as a string (RFC 7519 allows both)
    assert claims["sub"] == CLIENT_ID and claims["aud"] in (AUDIENCE, [AUDIENCE]) and claims["scope"] == SCOPE
    assert claims["iss"] == oauth_server.issuer_url
    assert claims["exp"] - claims["iat"] == oauth_server.token_expiry_s


def test_url_encoded_credentials_and_another_audience(oauth_server):
    request = TokenRequest(oauth_server.token_url, "app with space", CLIENT_SECRET, OTHER_AUDIENCE_SCOPE,
                           urlencode_credentials=True)
    claims = jwt_claims(fetch_token(request))
    assert claims["aud"] in ("someone-else", ["someone-else"])


def test_login_from_java_style_settings_makes_a_token_with_its_extensions(oauth_kafka, oauth_server):
    config = ClientConfig(oidc(oauth_kafka, oauth_server, **{"sasl.login.retry.backoff.max.ms": "1500"}))
    token = token_source(config, "127.0.0.1").current()
    assert token.principal == CLIENT_ID
    assert token.extensions == {"logicalCluster": "lkc-test"}
    assert 0 < token.expires_at - time.time() <= oauth_server.token_expiry_s


def test_wrong_endpoint_path_is_refused_at_once(oauth_server):
    url = oauth_server.url("/no-such-endpoint")
    started = time.monotonic()
    with pytest.raises(TokenEndpointError, match=r"refused the request: HTTP 40\d") as info:
        fetch_token(TokenRequest(url, CLIENT_ID, CLIENT_SECRET, backoff_max_s=5.0))
    assert time.monotonic() - started < 2.0  # a 4xx is final: no retries
    assert CLIENT_SECRET not in str(info.value) and "\n" not in str(info.value)


def test_unreachable_endpoint_fails_within_the_retry_bound(oauth_kafka):
    closed = f"http://127.0.0.1:{free_port()}/kafka/token"
    props = {**oidc(oauth_kafka, _Closed(closed)), "sasl.login.retry.backoff.ms": "100",
             "sasl.login.retry.backoff.max.ms": "1000", "sasl.login.connect.timeout.ms": "1000"}
    source = token_source(ClientConfig(props), "127.0.0.1")
    started = time.monotonic()
    with pytest.raises(TokenEndpointError, match=r"OAUTHBEARER login \(OIDC\): token endpoint .*cannot reach it") \
            as info:
        source.current()
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert 0.5 < elapsed < 3.0, elapsed  # retried with backoff 100, 200, 400 ms, then gave up after ~1 s
    assert "sasl.login.retry.backoff.max.ms=1000" in message and "attempts" in message
    assert CLIENT_SECRET not in message and "\n" not in message


class _Closed:
    """Stands in for an OAuth server whose token URL nothing listens on."""

    def __init__(self, url: str) -> None:
        self.token_url = url


def test_token_file(oauth_kafka, oauth_server, tmp_path):
    signed = fetch_token(TokenRequest(oauth_server.token_url, CLIENT_ID, CLIENT_SECRET, SCOPE))
    path = tmp_path / "token.jwt"
    path.write_text(signed + "\n")
    props = {**oidc(oauth_kafka, oauth_server), "sasl.oauthbearer.token.endpoint.url": path.as_uri(),
             "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;"}
    assert token_source(ClientConfig(props), "127.0.0.1").current().value == signed
    missing = {**props, "sasl.oauthbearer.token.endpoint.url": (tmp_path / "absent.jwt").as_uri()}
    with pytest.raises(AuthenticationError, match="cannot read the token file"):
        token_source(ClientConfig(missing), "127.0.0.1").current()
