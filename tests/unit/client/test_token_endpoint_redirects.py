"""A token endpoint that answers with a redirect: the redirect is refused with a typed error naming both addresses,
and the client secret goes nowhere else (urllib would re-send the Authorization header to the new address)."""

from __future__ import annotations

import base64
import http.server
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.certs import self_signed
from harness.json_http import JsonHandler, serve

from kafka_spark.client.auth.login import token_source
from kafka_spark.client.auth.oauth.token_endpoint import (
    TokenEndpointError,
    TokenEndpointRedirectError,
    TokenRequest,
    fetch_token,
)
from kafka_spark.client.config import ClientConfig

SECRET = "redirect-client-secret"
OAUTH = "org.apache.kafka.common.security.oauthbearer"
BASIC = "Basic " + base64.b64encode(f"ingest:{SECRET}".encode()).decode()


def _recorder(seen: list[str]) -> type[JsonHandler]:
    """Answers every method with a token-shaped JSON after noting the request, so that a followed redirect would
    both succeed and be seen."""

    class Target(JsonHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            seen.append(f"{self.requestline} {self.headers.get('Authorization', '')} {body}")
            self.answer({"access_token": "a.b.c", "token_type": "Bearer"})

        do_GET = do_POST = do_PUT = _any

    return Target


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """An HTTPS token endpoint (and a plain HTTP one) that redirect to `location[0]`, and two would-be targets:
    HTTPS on another host name (localhost) and port, and plain HTTP on another port."""
    cert, key = self_signed(tmp_path_factory.mktemp("redirects"))
    location: list[str] = [""]
    status: list[int] = [302]
    endpoint_seen: list[str] = []

    class Endpoint(JsonHandler):
        def do_POST(self) -> None:
            endpoint_seen.append(self.headers.get("Authorization", ""))
            self.form()
            self.send_response(status[0])
            self.send_header("Location", location[0])
            self.send_header("Content-Length", "0")
            self.end_headers()

    https_seen: list[str] = []
    http_seen: list[str] = []
    endpoint, endpoint_base = serve(Endpoint, (cert, key))
    plain_endpoint, plain_base = serve(Endpoint)
    https_target, https_base = serve(_recorder(https_seen), (cert, key))
    http_target, http_base = serve(_recorder(http_seen))
    running: list[http.server.HTTPServer] = [endpoint, plain_endpoint, https_target, http_target]
    yield {"url": f"{endpoint_base}/oauth2/token", "cert": cert, "location": location, "status": status,
           "endpoint_seen": endpoint_seen, "https_seen": https_seen, "http_seen": http_seen,
           "https_other_host": https_base.replace("127.0.0.1", "localhost"), "http": http_base,
           "plain_url": f"{plain_base}/oauth2/token"}
    for server in running:
        server.shutdown()


@pytest.fixture
def servers(started: dict) -> dict:
    """The servers, with their records emptied and the endpoint answering 302."""
    for key in ("endpoint_seen", "https_seen", "http_seen"):
        started[key].clear()
    started["status"][0] = 302
    started["location"][0] = ""
    return started


def config(url: str, cert: Path) -> ClientConfig:
    # the brokers' truststore also trusts the certificate, so that only the redirect refusal keeps the secret home
    return ClientConfig({
        "bootstrap.servers": "127.0.0.1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": f"{OAUTH}.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": url, "ssl.truststore.location": str(cert),
        "sasl.jaas.config": f"{OAUTH}.OAuthBearerLoginModule required "
                            f'clientId="ingest" clientSecret="{SECRET}" ssl.truststore.location="{cert}";',
        "sasl.login.retry.backoff.max.ms": "300"})


def _refused(s: dict, target: str) -> TokenEndpointRedirectError:
    with pytest.raises(TokenEndpointRedirectError) as failed:
        token_source(config(s["url"], s["cert"]), "127.0.0.1").current()
    error = failed.value
    message = str(error)
    assert SECRET not in message and BASIC not in message and "\n" not in message
    assert s["url"] in message and target in message
    assert error.endpoint == s["url"] and error.target == target
    assert s["https_seen"] == [] and s["http_seen"] == [], "the redirect target received the request"
    assert s["endpoint_seen"] == [BASIC], "a redirect is final: one request, not retried"
    return error


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("where", ["https on another host", "http"])
def test_a_redirect_is_refused_and_its_target_receives_nothing(servers: dict, status: int, where: str) -> None:
    base = servers["https_other_host"] if where.startswith("https") else servers["http"]
    servers["location"][0] = f"{base}/steal"
    servers["status"][0] = status
    error = _refused(servers, f"{base}/steal")
    assert error.status == status and isinstance(error, TokenEndpointError)
    assert re.search(rf"HTTP {status}, redirecting to ", str(error))


def test_a_relative_redirect_is_named_by_its_full_address(servers: dict) -> None:
    servers["location"][0] = "/elsewhere/token"
    endpoint_base = servers["url"].rsplit("/oauth2/token", 1)[0]
    _refused(servers, f"{endpoint_base}/elsewhere/token")


def test_credentials_in_the_redirect_address_are_not_repeated(servers: dict) -> None:
    base = servers["http"]
    port = base.rsplit(":", 1)[1]
    servers["location"][0] = f"http://ingest:{SECRET}@127.0.0.1:{port}/t?client_secret={SECRET}#{SECRET}"
    _refused(servers, f"{base}/t")


def test_a_plain_http_endpoint_refuses_a_redirect_too(servers: dict) -> None:
    servers["location"][0] = f"{servers['https_other_host']}/steal"
    with pytest.raises(TokenEndpointRedirectError, match=r"redirecting to https://localhost:\d+/steal") as failed:
        fetch_token(TokenRequest(servers["plain_url"], "ingest", SECRET, backoff_max_s=0.3))
    assert SECRET not in str(failed.value) and servers["https_seen"] == []
