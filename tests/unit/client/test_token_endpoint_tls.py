"""OIDC over HTTPS: the token endpoint is trusted through the `ssl.*` options inside `sasl.jaas.config` (else the
system's CAs), as Java's client does, never through the brokers' `ssl.*`, and its host name is always checked."""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.certs import self_signed
from harness.json_http import JsonHandler, serve

from kafka_spark.client.auth.login import login_config, token_source
from kafka_spark.client.auth.oauth.token_endpoint import TokenEndpointTlsError, TokenRequest, fetch_token
from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError

SECRET = "tls-endpoint-client-secret"
OAUTH = "org.apache.kafka.common.security.oauthbearer"
BASIC = "Basic " + base64.b64encode(f"ingest:{SECRET}".encode()).decode()


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _endpoint_handler(seen: list[str]) -> type[JsonHandler]:
    class Endpoint(JsonHandler):
        def do_POST(self) -> None:
            seen.append(f"{self.requestline} {self.headers.get('Authorization', '')} {self.form()}")
            now = int(time.time())
            token = f"{_b64({'alg': 'RS256'})}.{_b64({'sub': 'svc', 'iat': now, 'exp': now + 600})}.c2ln"
            self.answer({"access_token": token, "token_type": "Bearer"})

    return Endpoint


def _authority(tmp_path: Path, name: str, host: str | None = None) -> tuple[Path, Path]:
    directory = tmp_path / name
    directory.mkdir()
    return self_signed(directory, host)


@pytest.fixture
def endpoint_for(tmp_path: Path) -> Iterator:
    """Starts token endpoints over HTTPS with a given certificate; each records every request it decrypts."""
    servers: list[http.server.HTTPServer] = []

    def start(tls: tuple[Path, Path]) -> tuple[str, list[str]]:
        seen: list[str] = []
        server, base = serve(_endpoint_handler(seen), tls)
        servers.append(server)
        return f"{base}/oauth2/token", seen

    yield start
    for server in servers:
        server.shutdown()


def config(url: str, jaas_tls: str = "", **more: str) -> ClientConfig:
    return login_config({
        "bootstrap.servers": "127.0.0.1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": f"{OAUTH}.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": url,
        "sasl.jaas.config": f"{OAUTH}.OAuthBearerLoginModule required "
                            f'clientId="ingest" clientSecret="{SECRET}" {jaas_tls};',
        "sasl.login.retry.backoff.max.ms": "300", **more})


def _refused_tls(cfg: ClientConfig, seen: list[str], match: str) -> str:
    with pytest.raises(TokenEndpointTlsError, match=match) as failed:
        token_source(cfg, "127.0.0.1").current()
    message = str(failed.value)
    assert SECRET not in message and BASIC not in message and "\n" not in message
    assert seen == [], "the endpoint received a request although TLS should have failed"
    return message


@pytest.mark.parametrize("endpoint_trust", ["jaas", "brokers only"])
def test_a_certificate_for_another_host_gets_no_secret_when_brokers_skip_the_host_check(
        tmp_path: Path, endpoint_for, endpoint_trust: str) -> None:
    # The certificate is trusted (it is the CA), but names idp.other.example, not 127.0.0.1.
    cert, key = _authority(tmp_path, "other", host="idp.other.example")
    url, seen = endpoint_for((cert, key))
    jaas_tls = f'ssl.truststore.location="{cert}"' if endpoint_trust == "jaas" else ""
    brokers = {"ssl.truststore.location": str(cert), "ssl.endpoint.identification.algorithm": ""}
    cfg = config(url, jaas_tls, **brokers)
    message = _refused_tls(cfg, seen, r"TLS failed")
    if endpoint_trust == "jaas":
        assert "address mismatch" in message


def test_the_endpoint_is_trusted_through_its_own_jaas_truststore_not_the_brokers(tmp_path: Path,
                                                                                endpoint_for) -> None:
    endpoint_ca = _authority(tmp_path, "idp")
    broker_ca, _ = _authority(tmp_path, "brokers")
    url, seen = endpoint_for(endpoint_ca)
    cfg = config(url, f'ssl.truststore.location="{endpoint_ca[0]}"', **{"ssl.truststore.location": str(broker_ca)})
    assert token_source(cfg, "127.0.0.1").current().principal == "svc"
    assert len(seen) == 1 and BASIC in seen[0]


def test_the_endpoint_is_trusted_through_inline_jaas_certificates(tmp_path: Path, endpoint_for) -> None:
    endpoint_ca = _authority(tmp_path, "idp")
    url, seen = endpoint_for(endpoint_ca)
    pem = endpoint_ca[0].read_text()
    cfg = config(url, f'ssl.truststore.type="PEM" ssl.truststore.certificates="{pem}"')
    assert token_source(cfg, "127.0.0.1").current().principal == "svc"
    assert len(seen) == 1


def test_without_jaas_tls_options_the_brokers_truststore_is_not_used(tmp_path: Path, endpoint_for) -> None:
    endpoint_ca = _authority(tmp_path, "idp")
    url, seen = endpoint_for(endpoint_ca)
    cfg = config(url, **{"ssl.truststore.location": str(endpoint_ca[0])})
    message = _refused_tls(cfg, seen, r"TLS failed .*ssl\.truststore")
    assert "sasl.jaas.config" in message


def test_without_jaas_tls_options_the_system_cas_are_trusted(tmp_path: Path, endpoint_for,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint_ca = _authority(tmp_path, "idp")
    broker_ca, _ = _authority(tmp_path, "brokers")
    url, seen = endpoint_for(endpoint_ca)
    # OpenSSL's default verify paths, which ssl.create_default_context() loads, honour these variables
    empty = tmp_path / "no-certs"
    empty.mkdir()
    monkeypatch.setenv("SSL_CERT_FILE", str(endpoint_ca[0]))
    monkeypatch.setenv("SSL_CERT_DIR", str(empty))
    cfg = config(url, **{"ssl.truststore.location": str(broker_ca)})
    assert token_source(cfg, "127.0.0.1").current().principal == "svc"
    assert len(seen) == 1


def test_a_client_certificate_for_the_endpoint_comes_from_the_jaas_keystore(tmp_path: Path) -> None:
    server_cert, server_key = _authority(tmp_path, "idp")
    client_cert, client_key = _authority(tmp_path, "client", host="ingest.example")
    keystore = tmp_path / "client.pem"
    keystore.write_text(client_cert.read_text() + client_key.read_text())
    seen: list[str] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _endpoint_handler(seen))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server_cert, server_key)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(client_cert)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}/oauth2/token"
        cfg = config(url, f'ssl.truststore.location="{server_cert}" ssl.keystore.location="{keystore}"')
        assert token_source(cfg, "127.0.0.1").current().principal == "svc"
        assert len(seen) == 1
    finally:
        server.shutdown()


def test_fetch_token_refuses_a_context_that_skips_the_host_check() -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    with pytest.raises(ConfigError, match="host name"):
        fetch_token(TokenRequest("https://127.0.0.1:1/token", "ingest", SECRET), context)


@pytest.mark.parametrize(("jaas_tls", "match"), [
    ('ssl.endpoint.identification.algorithm=""', r"ssl\.endpoint\.identification\.algorithm: .*always checked"),
    ('ssl.trustore.location="/tmp/ca.pem"', r"ssl\.trustore\.location .*did you mean ssl\.truststore\.location"),
    ('ssl.truststore.type="JKS"', r"ssl\.truststore\.type=JKS: only PEM"),
    ('ssl.truststore.location="/nonexistent/ca.pem"', r"ssl\.truststore\.location: /nonexistent/ca\.pem is not"),
    ('ssl.truststore.location="/tmp/a.pem" ssl.truststore.certificates="x"', r"set one, not both"),
    ('ssl.keystore.key="k"', r"ssl\.keystore\.key and ssl\.keystore\.certificate\.chain go together"),
])
def test_wrong_token_endpoint_tls_options_are_refused_at_configuration(jaas_tls: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as refused:
        config("https://idp.example/oauth2/token", jaas_tls)
    assert SECRET not in str(refused.value) and "sasl.jaas.config" in str(refused.value)


def test_java_tls_options_without_a_python_counterpart_are_accepted() -> None:
    config("https://idp.example/oauth2/token", 'ssl.protocol="TLSv1.3" ssl.endpoint.identification.algorithm="https" '
                                               'ssl.truststore.password="changeit"')
