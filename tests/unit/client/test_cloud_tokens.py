"""Cloud identities to the bytes: what we send equals what independent maintained code makes for fixed
credentials and a fixed clock (no AWS, Google or Azure service is reachable from the test machine)."""

from __future__ import annotations

import base64
import datetime
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from kafka_spark.client.auth.login import login_config, mechanism_for
from kafka_spark.client.auth.oauth import cloud_tokens
from kafka_spark.client.auth.oauth.oauthbearer import initial_response
from kafka_spark.client.auth.oauth.tokens import Token
from kafka_spark.errors import AuthenticationError, ConfigError

pytest.importorskip("aws_msk_iam_sasl_signer")
from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
from harness.json_http import JsonHandler, serve
from kafka.net.sasl.msk import AwsMskIamClient

ACCESS_KEY = "AKIDEXAMPLEKAFKASPARK"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE/session+token=="
# The fixed instant of a test: taken when it starts (a signed token lives 15 minutes and must not have expired
# when it is checked), then frozen for every signer.
FIXED = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
BROKER = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Fixed credentials from the environment only, and a fixed clock for botocore's signer."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    import botocore.auth

    global FIXED
    FIXED = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    frozen = FIXED.replace(tzinfo=None)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: frozen)


def kafka_python_client(host: str, region: str, token: str | None = None) -> AwsMskIamClient:
    client = AwsMskIamClient(host=host, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=region, token=token)
    client.datestamp, client.timestamp = FIXED.strftime("%Y%m%d"), FIXED.strftime("%Y%m%dT%H%M%SZ")
    return client


@pytest.mark.parametrize("session_token", [None, SESSION_TOKEN])
def test_aws_msk_iam_payload_equals_kafka_pythons(aws, monkeypatch: pytest.MonkeyPatch,
                                                   session_token: str | None) -> None:
    if session_token:
        monkeypatch.setenv("AWS_SESSION_TOKEN", session_token)
    else:
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    ours = json.loads(cloud_tokens.msk_iam_payload({}, BROKER))
    theirs = json.loads(kafka_python_client(BROKER, "eu-west-1", session_token).first_message())
    # the user agent names the client; everything signed must be identical, signature included
    assert ours.pop("user-agent") == cloud_tokens.MSK_USER_AGENT
    theirs.pop("user-agent")
    assert ours == theirs
    assert ours["x-amz-credential"] == f"{ACCESS_KEY}/{FIXED:%Y%m%d}/eu-west-1/kafka-cluster/aws4_request"


def test_aws_msk_iam_mechanism_through_the_java_configuration(aws) -> None:
    config = login_config({
        "bootstrap.servers": f"{BROKER}:9098", "security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM",
        "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
        "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler"})
    mechanism = mechanism_for(config, BROKER)
    assert mechanism.name == "AWS_MSK_IAM"
    assert json.loads(mechanism.first()) == json.loads(cloud_tokens.msk_iam_payload({}, BROKER))
    assert mechanism.respond(b'{"version":"2020_10_22","request-id":"r-1"}') is None
    with pytest.raises(AuthenticationError, match="answered nothing"):
        mechanism.respond(b"")
    with pytest.raises(ConfigError, match="SASL_SSL"):
        login_config({"bootstrap.servers": f"{BROKER}:9098", "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "AWS_MSK_IAM"})


def test_msk_iam_oauthbearer_token_is_the_signers_and_its_signature_is_sigv4(aws) -> None:
    config = login_config({
        "bootstrap.servers": f"{BROKER}:9098", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "sasl.login.callback.handler.class": "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
        "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"})
    token = cloud_tokens.msk_iam_token(config.jaas_options(), BROKER)
    expected, expiry_ms = MSKAuthTokenProvider.generate_auth_token("eu-west-1")
    assert token.value == expected
    assert token.expires_at == expiry_ms / 1000 == FIXED.timestamp() + 900
    # the token is a presigned URL; its signature is the one kafka-python computes for the same request
    url = base64.urlsafe_b64decode(token.value + "=" * (-len(token.value) % 4)).decode()
    parts = urlsplit(url)
    assert parts.netloc == "kafka.eu-west-1.amazonaws.com"
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    signed = json.loads(kafka_python_client(parts.netloc, "eu-west-1").first_message())
    assert query["X-Amz-Signature"] == signed["x-amz-signature"]
    assert query["Action"] == "kafka-cluster:Connect" and query["X-Amz-Expires"] == "900"
    # and the SASL message carries it as a bearer token
    assert mechanism_for(config, BROKER).first() == initial_response(expected)


def test_region_comes_from_the_option_the_broker_host_or_the_aws_chain(aws, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cloud_tokens.region_of_host(BROKER) == "eu-west-1"
    assert cloud_tokens.region_of_host("b-2.x.kafka-serverless.us-gov-west-1.amazonaws.com") == "us-gov-west-1"
    assert cloud_tokens.region_of_host("broker.internal.example") is None
    assert cloud_tokens.msk_region({"awsRegion": "ap-south-1"}, BROKER) == "ap-south-1"
    with pytest.raises(ConfigError, match="no region"):
        cloud_tokens.msk_region({}, "broker.internal.example")
    monkeypatch.setenv("AWS_REGION", "ca-central-1")
    assert cloud_tokens.msk_region({}, "broker.internal.example") == "ca-central-1"


def test_no_credentials_is_a_one_line_error_without_secrets(monkeypatch: pytest.MonkeyPatch, aws) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(AuthenticationError) as failed:
        cloud_tokens.msk_iam_payload({}, BROKER)
    assert "\n" not in str(failed.value) and SECRET_KEY not in str(failed.value)


# ---- Python hooks ------------------------------------------------------------------------------------

class _AccessToken:
    """Shaped like azure-identity's AccessToken."""

    def __init__(self, token: str, expires_on: int) -> None:
        self.token, self.expires_on = token, expires_on


def hook_tuple(options: dict[str, str]) -> tuple[str, float]:
    return f"tok-{options['tenant']}", 4_000_000_000.0


def hook_object(options: dict[str, str]) -> _AccessToken:
    return _AccessToken("tok-object", 4_000_000_000)


def hook_millis(options: dict[str, str]) -> tuple[str, int]:
    return "tok-ms", 4_000_000_000_000


def hook_bad(options: dict[str, str]) -> str:
    return "just a string"


def hook_failing(options: dict[str, str]) -> tuple[str, float]:
    raise RuntimeError("identity service said no")


def test_hooks_return_a_pair_an_access_token_or_milliseconds() -> None:
    here = __name__
    assert cloud_tokens.hook_token(f"{here}:hook_tuple", {"tenant": "t1"}).value == "tok-t1"
    got = cloud_tokens.hook_token(f"{here}:hook_object", {})
    assert (got.value, got.expires_at) == ("tok-object", 4_000_000_000.0)
    assert cloud_tokens.hook_token(f"{here}:hook_millis", {}).expires_at == 4_000_000_000.0
    assert isinstance(cloud_tokens.hook_token(f"{here}:hook_tuple", {"tenant": "x"}), Token)
    with pytest.raises(ConfigError, match="must return"):
        cloud_tokens.hook_token(f"{here}:hook_bad", {})
    with pytest.raises(AuthenticationError, match="identity service said no"):
        cloud_tokens.hook_token(f"{here}:hook_failing", {})
    with pytest.raises(ConfigError, match="module:function"):
        cloud_tokens.load_hook("no_colon_here")
    with pytest.raises(ConfigError, match="no_such_module"):
        cloud_tokens.load_hook("no_such_module:f")


def test_a_hook_is_chosen_by_the_login_callback_handler_option() -> None:
    config = login_config({
        "bootstrap.servers": "127.0.0.1:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required tenant="t9";',
        "sasl.login.callback.handler.class": f"{__name__}:hook_tuple"})
    assert mechanism_for(config, "127.0.0.1").first() == initial_response("tok-t9")
    with pytest.raises(ConfigError, match=r"sasl\.login\.callback\.handler\.class=com\.example\.Custom"):
        login_config({**config.properties(redact=False), "sasl.login.callback.handler.class": "com.example.Custom"})


# ---- Google Cloud Managed Service for Apache Kafka ------------------------------------------------------

def test_google_token_wraps_the_access_token_google_auth_gets(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """google-auth signs a service-account assertion and trades it at the key's token URI (here a local
    endpoint that verifies the assertion with the public key); the token sent is Google's wrapped form."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from google.auth import jwt

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    seen: list[dict[str, object]] = []

    class TokenEndpoint(JsonHandler):
        def do_POST(self) -> None:
            form = self.form()
            # google-auth addresses its assertion to Google's token endpoint whatever URI it posts to
            claims = jwt.decode(form["assertion"], certs=public_pem, audience="https://oauth2.googleapis.com/token")
            seen.append({"grant_type": form["grant_type"], **claims})
            self.answer({"access_token": "ya29.a0-local-access-token", "expires_in": 3599, "token_type": "Bearer"})

    server, base = serve(TokenEndpoint)
    token_uri = f"{base}/token"
    email = "kafka-reader@demo-project.iam.gserviceaccount.com"
    key_file = tmp_path / "sa.json"
    key_file.write_text(json.dumps({
        "type": "service_account", "project_id": "demo-project", "private_key_id": "k1",
        "private_key": private_pem, "client_email": email, "client_id": "1234", "token_uri": token_uri}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    try:
        token = cloud_tokens.google_token({})
    finally:
        server.shutdown()
    assert seen and seen[0]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert seen[0]["iss"] == email and "cloud-platform" in str(seen[0]["scope"])
    header, payload, access = token.value.split(".")

    def unb64(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    assert json.loads(unb64(header)) == {"typ": "JWT", "alg": "GOOG_OAUTH2_TOKEN"}
    claims = json.loads(unb64(payload))
    assert claims["sub"] == email == token.principal and claims["scope"] == "kafka"
    assert abs(claims["exp"] - (claims["iat"] + 3599)) <= 2 and token.expires_at == pytest.approx(claims["exp"], abs=1)
    assert unb64(access) == b"ya29.a0-local-access-token"
