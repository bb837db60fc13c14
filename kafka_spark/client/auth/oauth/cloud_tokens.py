"""Tokens from cloud identities, through their maintained libraries (optional extras), and from Python hooks.

- AWS MSK IAM: `aws-msk-iam-sasl-signer-python` makes the OAUTHBEARER token; the older `AWS_MSK_IAM`
  mechanism's signed JSON is made with botocore's SigV4 query signer. Credentials come from the usual
  AWS chain, or the profile / role named in the JAAS options (`awsProfileName`, `awsRoleArn`).
- Google Cloud Managed Kafka: `google-auth`'s application default credentials, wrapped the way Google's
  Java login handler wraps them (an unsigned JWT-shaped token carrying the access token).
- Azure Event Hubs (Entra ID): `azure-identity`'s `DefaultAzureCredential`, scope
  ``https://<namespace host>/.default``.
- Any other source: a ``module:function`` hook returning ``(token, expires_at_epoch_seconds)`` or an
  object with ``token`` and ``expires_on`` (as azure-identity's `AccessToken`).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka_spark.client.auth.oauth.oauthbearer import b64url
from kafka_spark.client.auth.oauth.tokens import Token
from kafka_spark.client.callables import import_callable
from kafka_spark.errors import AuthenticationError, ConfigError

MSK_USER_AGENT = "kafka-spark"
_AWS_REGION = re.compile(r"(?:^|[.-])((?:us|eu|ap|sa|ca|me|af|il|mx|cn)(?:-gov|-iso[a-z]?)?-[a-z]+-\d)(?:[.-]|$)")


def _require(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"this login needs the {module.split('.')[0]} package: pip install "
                          f"'kafka-spark[{extra}]'") from None


def region_of_host(host: str) -> str | None:
    """The AWS region named in a broker host (``b-1.x.c2.kafka.us-east-1.amazonaws.com``), if any."""
    match = _AWS_REGION.search(host)
    return match.group(1) if match else None


def msk_region(options: Mapping[str, str], host: str) -> str:
    """The region to sign for: the JAAS option `awsRegion`, else the broker host's, else the AWS chain's."""
    # AWS_REGION is what the AWS SDKs for Java read; botocore reads AWS_DEFAULT_REGION and profiles
    region = options.get("awsRegion") or region_of_host(host) or os.environ.get("AWS_REGION")
    if region:
        return region
    botocore_session = _require("botocore.session", "aws")
    region = botocore_session.get_session().get_config_variable("region")
    if not region:
        raise ConfigError(f"AWS MSK IAM: no region in the broker host {host!r}, the JAAS option awsRegion or "
                          "the AWS configuration (AWS_REGION, AWS_DEFAULT_REGION or a profile)")
    return str(region)


def msk_iam_token(options: Mapping[str, str], host: str) -> Token:
    """An MSK IAM OAUTHBEARER token from `aws-msk-iam-sasl-signer-python`."""
    signer = _require("aws_msk_iam_sasl_signer", "aws").MSKAuthTokenProvider
    region = msk_region(options, host)
    debug = options.get("awsDebugCreds", "false").lower() == "true"
    try:
        if options.get("awsRoleArn"):
            token, expiry_ms = signer.generate_auth_token_from_role_arn(
                region, options["awsRoleArn"], options.get("awsRoleSessionName", "MSKSASLDefaultSession"))
        elif options.get("awsProfileName"):
            token, expiry_ms = signer.generate_auth_token_from_profile(region, options["awsProfileName"])
        else:
            token, expiry_ms = signer.generate_auth_token(region, aws_debug_creds=debug)
    except Exception as exc:  # botocore raises many types; the message names the credential problem
        raise AuthenticationError(f"AWS MSK IAM: cannot sign a token for {region}: {type(exc).__name__}: "
                                  f"{_first_line(exc)}") from None
    return Token(token, expiry_ms / 1000, time.time())


def msk_iam_payload(options: Mapping[str, str], host: str) -> bytes:
    """The `AWS_MSK_IAM` mechanism's single client message: a SigV4-presigned ``kafka-cluster:Connect``
    for the broker host, as JSON with lower-case keys (version 2020_10_22)."""
    from urllib.parse import parse_qsl, urlsplit

    auth = _require("botocore.auth", "aws")
    awsrequest = _require("botocore.awsrequest", "aws")
    botocore_session = _require("botocore.session", "aws")

    region = msk_region(options, host)
    session = botocore_session.Session(profile=options.get("awsProfileName") or None)
    credentials = session.get_credentials()
    if credentials is None:
        raise AuthenticationError("AWS MSK IAM: no AWS credentials found (environment, profile, or instance role)")
    request = awsrequest.AWSRequest(method="GET", url=f"https://{host}/", params={"Action": "kafka-cluster:Connect"})
    signer = auth.SigV4QueryAuth(credentials.get_frozen_credentials(), "kafka-cluster", region, expires=900)
    signer.add_auth(request)
    query = dict(parse_qsl(urlsplit(request.prepare().url).query))
    payload = {"version": "2020_10_22", "host": host, "user-agent": MSK_USER_AGENT,
               **{k.lower(): v for k, v in query.items()}}
    return json.dumps(payload, separators=(",", ":")).encode()


def google_token(options: Mapping[str, str]) -> Token:
    """A token for Google Cloud Managed Service for Apache Kafka from application default credentials."""
    auth = _require("google.auth", "google")
    requests_transport = _require("google.auth.transport.requests", "google")
    try:
        credentials, _ = auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
        credentials.refresh(requests_transport.Request())
    except Exception as exc:
        raise AuthenticationError(f"Google credentials: {type(exc).__name__}: {_first_line(exc)}") from None
    principal = (options.get("principal") or getattr(credentials, "service_account_email", None)
                 or getattr(credentials, "signer_email", None) or "")
    if not principal:
        raise ConfigError("Google credentials name no service account: set principal=\"...\" in sasl.jaas.config")
    expires = credentials.expiry.timestamp() if credentials.expiry else time.time() + 3600
    now = time.time()
    header = b64url(json.dumps({"typ": "JWT", "alg": "GOOG_OAUTH2_TOKEN"}).encode())
    claims = b64url(json.dumps({"exp": int(expires), "iat": int(now), "scope": "kafka", "sub": principal}).encode())
    return Token(f"{header}.{claims}.{b64url(credentials.token.encode())}", expires, now, principal=principal)


def entra_id(options: Mapping[str, str]) -> tuple[str, float]:
    """A hook for Azure Event Hubs: an Entra ID token for ``https://<bootstrap host>/.default`` (or the JAAS
    option `scope`) from azure-identity's `DefaultAzureCredential` (environment, workload or managed identity,
    Azure CLI, ...); `disableInstanceDiscovery="true"` for an authority Entra ID's discovery does not know
    (Azure Stack, a private cloud)."""
    identity = _require("azure.identity", "azure")
    host = options.get("bootstrap.servers", "").split(",")[0].rsplit(":", 1)[0]
    scope = options.get("scope") or f"https://{host}/.default"
    extra = {"disable_instance_discovery": True} if options.get("disableInstanceDiscovery") == "true" else {}
    try:
        access = identity.DefaultAzureCredential(**extra).get_token(scope)
    except Exception as exc:
        raise AuthenticationError(f"Entra ID token for {scope}: {type(exc).__name__}: {_first_line(exc)}") from None
    return access.token, float(access.expires_on)


def _first_line(exc: BaseException) -> str:
    # identity libraries explain at length over many lines; errors here stay on one
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else ""


def load_hook(spec: str) -> Callable[[dict[str, str]], Any]:
    """The function named by ``module:function``."""
    return import_callable(spec, f"token hook {spec}", f"a token hook is written module:function, got {spec!r}")


def hook_token(spec: str, options: Mapping[str, str]) -> Token:
    """Call a hook; accept ``(token, expires_at)``, an object with ``token`` and ``expires_on``, or a `Token`."""
    now = time.time()
    try:
        got = load_hook(spec)(dict(options))
    except (ConfigError, AuthenticationError):
        raise
    except Exception as exc:
        raise AuthenticationError(f"token hook {spec} failed: {type(exc).__name__}: {_first_line(exc)}") from None
    if isinstance(got, Token):
        return got
    if isinstance(got, tuple) and len(got) == 2:
        token, expires = got
    elif hasattr(got, "token") and hasattr(got, "expires_on"):
        token, expires = got.token, got.expires_on
    else:
        raise ConfigError(f"token hook {spec} must return (token, expires_at) or an object with token and "
                          "expires_on")
    if not isinstance(token, str) or not token:
        raise AuthenticationError(f"token hook {spec} returned an empty token")
    expires = float(expires)
    if expires > 1e11:  # milliseconds, as the AWS signer gives them
        expires /= 1000
    return Token(token, expires, now)
