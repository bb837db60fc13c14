"""Azure Event Hubs with Entra ID: the hook gets its token through azure-identity's `DefaultAzureCredential`,
here from a local HTTPS authority (Entra ID itself cannot be reached from the test machine), for the scope
Event Hubs documents: ``https://<namespace host>/.default``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.certs import self_signed
from harness.json_http import JsonHandler, serve

from kafka_spark.client.auth.login import mechanism_for
from kafka_spark.client.auth.oauth.oauthbearer import initial_response
from kafka_spark.client.config import ClientConfig

pytest.importorskip("azure.identity")

TENANT = "0b1c2d3e-aaaa-bbbb-cccc-000000000001"
CLIENT_ID = "5f6e7d8c-1111-2222-3333-444444444444"
CLIENT_SECRET = "entra-client-secret-value"
NAMESPACE = "orders-ns.servicebus.windows.net"


@pytest.fixture
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, str]]]:
    """A local Entra-like authority over HTTPS: OpenID metadata and a client-credentials token endpoint."""
    cert, key = self_signed(tmp_path)
    requests_seen: list[dict[str, str]] = []

    class Authority(JsonHandler):
        def do_GET(self) -> None:
            base = f"{url}/{TENANT}"
            self.answer({"token_endpoint": f"{base}/oauth2/v2.0/token",
                         "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                         "issuer": f"{base}/v2.0", "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode"})

        def do_POST(self) -> None:
            requests_seen.append({"path": self.path, **self.form()})
            self.answer({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                         "access_token": "eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJldmVudGh1YnMifQ.c2ln"})

    server, url = serve(Authority, (cert, key))
    for name, value in {"AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_ID": CLIENT_ID, "AZURE_CLIENT_SECRET": CLIENT_SECRET,
                        "AZURE_AUTHORITY_HOST": url, "REQUESTS_CA_BUNDLE": str(cert),
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
        "sasl.login.callback.handler.class": "kafka_spark.client.auth.oauth.cloud_tokens:entra_id"})
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
        "sasl.login.callback.handler.class": "kafka_spark.client.auth.oauth.cloud_tokens:entra_id"})
    with pytest.raises(AuthenticationError) as failed:
        mechanism_for(config, NAMESPACE)
    message = str(failed.value)
    assert "\n" not in message and CLIENT_SECRET not in message and "https://other.example/.default" in message
