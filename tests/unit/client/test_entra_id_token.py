"""Azure Event Hubs with Entra ID: the hook gets its token through azure-identity's `DefaultAzureCredential`,
here from a local HTTPS authority (Entra ID itself cannot be reached from the test machine), for the scope
Event Hubs documents: ``https://<namespace host>/.default``."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_spark.client.config import ClientConfig
from kafka_spark.client.oauthbearer import initial_response
from kafka_spark.client.sasl_login import mechanism_for

pytest.importorskip("azure.identity")

TENANT = "0b1c2d3e-aaaa-bbbb-cccc-000000000001"
CLIENT_ID = "5f6e7d8c-1111-2222-3333-444444444444"
CLIENT_SECRET = "entra-client-secret-value"
NAMESPACE = "orders-ns.servicebus.windows.net"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with `cryptography`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "authority.pem", directory / "authority.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, str]]]:
    """A local Entra-like authority over HTTPS: OpenID metadata and a client-credentials token endpoint."""
    cert, key = self_signed(tmp_path)
    requests_seen: list[dict[str, str]] = []

    class Authority(http.server.BaseHTTPRequestHandler):
        def _json(self, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            base = f"https://127.0.0.1:{port}/{TENANT}"
            self._json({"token_endpoint": f"{base}/oauth2/v2.0/token",
                        "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                        "issuer": f"{base}/v2.0", "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode"})

        def do_POST(self) -> None:
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            requests_seen.append({"path": self.path, **{k: v[0] for k, v in form.items()}})
            self._json({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                        "access_token": "eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJldmVudGh1YnMifQ.c2ln"})

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Authority)
    port = server.server_address[1]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name, value in {"AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_ID": CLIENT_ID, "AZURE_CLIENT_SECRET": CLIENT_SECRET,
                        "AZURE_AUTHORITY_HOST": f"https://127.0.0.1:{port}", "REQUESTS_CA_BUNDLE": str(cert),
                        "SSL_CERT_FILE": str(cert)}.items():
        monkeypatch.setenv(name, value)
    yield requests_seen
    server.shutdown()


def test_event_hubs_token_comes_from_azure_identity_for_the_namespace_scope(authority) -> None:
    config = ClientConfig({
        "bootstrap.servers": f"{NAMESPACE}:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        # a local authority is not one Entra ID's instance discovery knows
        "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                            'disableInstanceDiscovery="true";',
        "sasl.login.callback.handler.class": "kafka_spark.client.cloud_tokens:entra_id"})
    message = mechanism_for(config, NAMESPACE).first()
    assert message == initial_response("eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJldmVudGh1YnMifQ.c2ln")
    [token_request] = authority
    assert token_request["path"] == f"/{TENANT}/oauth2/v2.0/token"
    assert token_request["grant_type"] == "client_credentials"
    assert token_request["client_id"] == CLIENT_ID and token_request["client_secret"] == CLIENT_SECRET
    assert token_request["scope"] == f"https://{NAMESPACE}/.default"


def test_an_unreachable_authority_is_a_one_line_error_without_the_secret(authority, monkeypatch) -> None:
    from kafka_spark.errors import AuthenticationError

    monkeypatch.setenv("AZURE_AUTHORITY_HOST", "https://127.0.0.1:9")
    config = ClientConfig({
        "bootstrap.servers": f"{NAMESPACE}:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                            'disableInstanceDiscovery="true" scope="https://other.example/.default";',
        "sasl.login.callback.handler.class": "kafka_spark.client.cloud_tokens:entra_id"})
    with pytest.raises(AuthenticationError) as failed:
        mechanism_for(config, NAMESPACE)
    message = str(failed.value)
    assert "\n" not in message and CLIENT_SECRET not in message and "https://other.example/.default" in message
