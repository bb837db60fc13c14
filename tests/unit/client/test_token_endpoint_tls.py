"""OIDC over HTTPS: the token endpoint's certificate is checked against `ssl.truststore.*`, as the brokers' is."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.certs import self_signed
from harness.json_http import JsonHandler, serve

from kafka_spark.client.config import ClientConfig
from kafka_spark.client.sasl_login import token_source
from kafka_spark.client.token_endpoint import TokenEndpointError

SECRET = "tls-endpoint-client-secret"
OAUTH = "org.apache.kafka.common.security.oauthbearer"


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


@pytest.fixture
def https_endpoint(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """A token endpoint over HTTPS with a self-signed certificate; it records the Authorization headers."""
    cert, key = self_signed(tmp_path)
    seen: list[str] = []

    class Endpoint(JsonHandler):
        def do_POST(self) -> None:
            self.form()
            seen.append(self.headers.get("Authorization", ""))
            now = int(time.time())
            token = f"{_b64({'alg': 'RS256'})}.{_b64({'sub': 'svc', 'iat': now, 'exp': now + 600})}.c2ln"
            self.answer({"access_token": token, "token_type": "Bearer"})

    server, base = serve(Endpoint, (cert, key))
    yield f"{base}/oauth2/token", cert, seen
    server.shutdown()


def config(url: str, **more: str) -> ClientConfig:
    return ClientConfig({
        "bootstrap.servers": "127.0.0.1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": f"{OAUTH}.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": url,
        "sasl.jaas.config": f"{OAUTH}.OAuthBearerLoginModule required "
                            f'clientId="ingest" clientSecret="{SECRET}";',
        "sasl.login.retry.backoff.max.ms": "300", **more})


def test_the_endpoint_is_trusted_through_the_truststore(https_endpoint) -> None:
    url, cert, seen = https_endpoint
    token = token_source(config(url, **{"ssl.truststore.location": str(cert)}), "127.0.0.1").current()
    assert token.principal == "svc"
    assert seen == ["Basic " + base64.b64encode(f"ingest:{SECRET}".encode()).decode()]


def test_an_untrusted_endpoint_is_a_tls_error_naming_the_truststore(https_endpoint) -> None:
    url, _, seen = https_endpoint
    with pytest.raises(TokenEndpointError, match=r"TLS failed .*ssl\.truststore") as failed:
        token_source(config(url), "127.0.0.1").current()
    assert SECRET not in str(failed.value) and "\n" not in str(failed.value) and not seen
