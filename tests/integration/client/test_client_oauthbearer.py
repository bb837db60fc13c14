"""SASL/OAUTHBEARER against Kafka 4.1: unsecured tokens, OIDC JWTs checked against the OAuth server's JWKS,
KIP-368 re-authentication across token lifetimes, and refusals as one-line typed errors."""

from __future__ import annotations

import base64
import json
import time

import pytest
from harness.oauth import CLIENT_ID, CLIENT_SECRET, MODULE, oidc, unsecured
from harness.oauth_kafka import OIDC, REAUTH, reauthentications
from harness.oauth_server import AUDIENCE, OTHER_AUDIENCE_SCOPE

from kafka_spark.client import KafkaClient
from kafka_spark.client.auth.login import token_source
from kafka_spark.client.auth.oauth.oauthbearer import jwt_claims
from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import AuthenticationError

VALUES = [f"record-{i}".encode() for i in range(5)]
RETRIEVERS = "org.apache.kafka.common.security.oauthbearer"


def _produce(client: KafkaClient, topic: str) -> None:
    with client.producer() as producer:
        for value in VALUES:
            producer.send(topic, value, partition=0)
        producer.flush(timeout=30)


def _fetch(client: KafkaClient, topic: str) -> list[bytes]:
    table = client.fetch(topic, 0, 0, len(VALUES)).read_all()
    assert table is not None
    return table.column("value").to_pylist()


def _refused(props: dict[str, str]) -> str:
    with KafkaClient(props) as client, pytest.raises(AuthenticationError) as info:
        client.metadata([])
    message = str(info.value)
    assert "\n" not in message and "OAUTHBEARER" in message and CLIENT_SECRET not in message
    return message


def test_unsecured_token_round_trip(oauth_kafka, topic_name):
    oauth_kafka.create_topic(topic_name)
    with KafkaClient(unsecured(oauth_kafka)) as client:
        _produce(client, topic_name)
        assert _fetch(client, topic_name) == VALUES


def test_oidc_token_round_trip(oauth_kafka, oauth_server, topic_name):
    oauth_kafka.create_topic(topic_name)
    with KafkaClient(oidc(oauth_kafka, oauth_server)) as client:
        _produce(client, topic_name)
        assert _fetch(client, topic_name) == VALUES


def test_missing_scope_is_refused_by_the_unsecured_validator(oauth_kafka):
    message = _refused(unsecured(oauth_kafka, scope="other"))
    assert "SASL_AUTHENTICATION_FAILED" in message and "status=insufficient_scope, scope=[kafka]" in message


def test_unsigned_token_is_refused_by_the_jwks_validator(oauth_kafka):
    message = _refused(unsecured(oauth_kafka, listener=OIDC))
    assert "SASL_AUTHENTICATION_FAILED" in message and "status=invalid_token" in message


def test_signed_token_for_another_audience_is_refused(oauth_kafka, oauth_server):
    message = _refused(oidc(oauth_kafka, oauth_server, scope=OTHER_AUDIENCE_SCOPE))
    assert "status=invalid_token" in message


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_forged_signature_is_refused(oauth_kafka, oauth_server, tmp_path):
    # the right claims with a signature the OAuth server never made
    now = int(time.time())
    claims = {"sub": CLIENT_ID, "aud": AUDIENCE, "iss": oauth_server.issuer_url, "iat": now, "exp": now + 60}
    path = tmp_path / "forged.jwt"
    path.write_text(f'{_b64({"alg": "RS256", "kid": "forged"})}.{_b64(claims)}.Zm9yZ2Vk')
    props = {**oidc(oauth_kafka, oauth_server), "sasl.oauthbearer.token.endpoint.url": path.as_uri(),
             "sasl.jaas.config": f"{MODULE} ;"}
    assert "status=invalid_token" in _refused(props)


def test_expired_token_is_refused_before_it_is_sent(oauth_kafka, oauth_server, tmp_path):
    now = int(time.time())
    path = tmp_path / "expired.jwt"
    path.write_text(f'{_b64({"alg": "RS256"})}.{_b64({"sub": CLIENT_ID, "iat": now - 600, "exp": now - 60})}.c2ln')
    props = {**oidc(oauth_kafka, oauth_server), "sasl.oauthbearer.token.endpoint.url": path.as_uri(),
             "sasl.jaas.config": f"{MODULE} ;"}
    message = _refused(props)
    assert "has already expired" in message


def test_unreachable_token_endpoint_is_a_typed_error(oauth_kafka, oauth_server):
    props = {**oidc(oauth_kafka, oauth_server), "sasl.login.retry.backoff.max.ms": "300",
             "sasl.oauthbearer.token.endpoint.url": oauth_server.url("/token").replace(
                 f":{oauth_server.port}/", ":1/")}
    message = _refused(props)
    assert "cannot reach it" in message


def _read_for(client: KafkaClient, topic: str, seconds: float) -> None:
    # a request every 0.1 s: re-authentication is lazy, a request within the last 5-15% of a session makes it
    # (as in Java's client); a connection idle past the session's end reconnects instead
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert _fetch(client, topic) == VALUES
        time.sleep(0.1)


def test_sessions_are_re_authenticated_on_the_same_connection(oauth_kafka, topic_name):
    # unsecured tokens live an hour; the listener's sessions 4 s: only KIP-368 keeps the connection
    oauth_kafka.create_topic(topic_name)
    before = reauthentications(oauth_kafka)
    with KafkaClient(unsecured(oauth_kafka, listener=REAUTH)) as client:
        _produce(client, topic_name)
        conn = client.cluster.connection(1)
        _read_for(client, topic_name, 5)
        assert client.cluster.connection(1) is conn and conn.reauthentications >= 1
    assert reauthentications(oauth_kafka) > before  # the broker's own record


def test_oidc_tokens_refresh_and_sessions_re_authenticate(oauth_kafka, oauth_server, topic_name):
    oauth_kafka.create_topic(topic_name)
    # an explicit default makes this test's login its own, so the fetches counted are this test's
    props = oidc(oauth_kafka, oauth_server, **{"sasl.login.refresh.min.period.seconds": "60"})
    source = token_source(ClientConfig(props), "127.0.0.1")
    fetched = source.fetches
    with KafkaClient(props) as client:
        _produce(client, topic_name)
        conn = client.cluster.connection(1)
        _read_for(client, topic_name, 1.2 * oauth_server.token_expiry_s)
        assert source.fetches - fetched >= 2  # 10 s tokens, refreshed at 80-85% of their life
        assert conn.reauthentications >= 2  # sessions end with the token or after 4 s


def test_idle_connection_past_its_session_reconnects(oauth_kafka, topic_name):
    oauth_kafka.create_topic(topic_name)
    with KafkaClient(unsecured(oauth_kafka, listener=REAUTH)) as client:
        _produce(client, topic_name)
        conn = client.cluster.connection(1)
        time.sleep(4.5)  # the broker would close the connection on the next request
        assert _fetch(client, topic_name) == VALUES
        assert conn.reauthentications == 0


def test_jwt_bearer_grant_trades_a_signed_assertion_for_a_token(oauth_server, tmp_path):
    """Kafka 4.1's jwt-bearer grant: our ES256 assertion, with a template's claim, is traded at the OAuth server
    for a token it signs for the assertion's subject. (This server leaves `aud` out of tokens of this grant, so
    the audience-checking listener would refuse them: no broker round trip here.)"""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = tmp_path / "assertion.pem"
    key.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    template = tmp_path / "assertion-template.json"
    template.write_text(json.dumps({"payload": {"scope": "kafka"}}))
    props = {"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SASL_PLAINTEXT",
             "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": f"{MODULE};",
             "sasl.login.callback.handler.class": f"{RETRIEVERS}.OAuthBearerLoginCallbackHandler",
             "sasl.oauthbearer.token.endpoint.url": oauth_server.token_url,
             "sasl.oauthbearer.jwt.retriever.class": f"{RETRIEVERS}.JwtBearerJwtRetriever",
             # this authorization server authenticates the client of a jwt-bearer grant too
             "sasl.oauthbearer.client.credentials.client.id": CLIENT_ID,
             "sasl.oauthbearer.client.credentials.client.secret": CLIENT_SECRET,
             "sasl.oauthbearer.assertion.algorithm": "ES256",
             "sasl.oauthbearer.assertion.claim.sub": "ingest-service",
             "sasl.oauthbearer.assertion.claim.iss": "ingest-service",
             "sasl.oauthbearer.assertion.claim.aud": oauth_server.token_url,
             "sasl.oauthbearer.assertion.template.file": str(template),
             "sasl.oauthbearer.assertion.private.key.file": str(key)}
    token = token_source(ClientConfig(props), "127.0.0.1").current()
    claims = jwt_claims(token.value)
    header = json.loads(base64.urlsafe_b64decode(token.value.split(".")[0] + "==="))
    assert header["alg"] == "RS256" and token.value.split(".")[2]  # signed by the server, not our assertion
    assert token.principal == claims["sub"] == "ingest-service" and claims["scope"] == "kafka"
    assert claims["iss"] == oauth_server.issuer_url
