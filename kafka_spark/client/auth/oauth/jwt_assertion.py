"""The client assertion of OAuth's jwt-bearer grant (RFC 7523), as Kafka 4.1's `JwtBearerJwtRetriever` makes it.

Either a ready assertion from `sasl.oauthbearer.assertion.file` (read on every fetch, so a rotated file is
picked up), or one built here: `iss`, `sub`, `aud` from `sasl.oauthbearer.assertion.claim.*`, `iat`, `exp`
and `nbf` around now, an optional random `jti`, static claims from the template file, signed RS256 or
ES256 with the PKCS#8 key in `sasl.oauthbearer.assertion.private.key.file` (`cryptography` signs).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_spark.client.auth.oauth.oauthbearer import b64url
from kafka_spark.errors import AuthenticationError, ConfigError

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ALGORITHMS = ("RS256", "ES256")


@dataclass(frozen=True)
class AssertionSettings:
    """Kafka 4.1's `sasl.oauthbearer.assertion.*` settings; the passphrase stays out of `repr`."""

    file: str | None = None
    algorithm: str = "RS256"
    aud: str | None = None
    iss: str | None = None
    sub: str | None = None
    exp_seconds: int = 300
    nbf_seconds: int = 60
    include_jti: bool = False
    private_key_file: str | None = None
    passphrase: str | None = field(default=None, repr=False)
    template_file: str | None = None

    def check(self) -> None:
        """Refuse settings that cannot make an assertion, naming the option; no file is read."""
        if self.file:
            return
        if self.algorithm.upper() not in ALGORITHMS:
            raise ConfigError(f"sasl.oauthbearer.assertion.algorithm must be RS256 or ES256, got {self.algorithm!r}")
        if not self.private_key_file:
            raise ConfigError("the jwt-bearer grant needs sasl.oauthbearer.assertion.file or "
                              "sasl.oauthbearer.assertion.private.key.file")


def _read(path: str, option: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{option}: cannot read {path} ({exc.strerror})") from None


def _template(path: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    if not path:
        return {}, {}
    try:
        template = json.loads(_read(path, "sasl.oauthbearer.assertion.template.file"))
    except ValueError:
        raise ConfigError("sasl.oauthbearer.assertion.template.file is not JSON") from None
    if not isinstance(template, dict):
        raise ConfigError("sasl.oauthbearer.assertion.template.file must hold an object with header and payload")
    header, payload = template.get("header", {}), template.get("payload", {})
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise ConfigError("sasl.oauthbearer.assertion.template.file: header and payload must be objects")
    return header, payload


def _sign(settings: AssertionSettings, signing_input: bytes) -> bytes:
    try:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    except ImportError:
        raise ConfigError("the jwt-bearer grant signs with the cryptography package: "
                          "pip install 'kafka-spark[oauth]'") from None
    assert settings.private_key_file is not None
    pem = _read(settings.private_key_file, "sasl.oauthbearer.assertion.private.key.file")
    try:
        key = serialization.load_pem_private_key(
            pem, settings.passphrase.encode() if settings.passphrase else None)
    except (ValueError, TypeError):
        # never the key or the passphrase in the message
        raise ConfigError("sasl.oauthbearer.assertion.private.key.file: not a PEM private key, or the passphrase "
                          "(sasl.oauthbearer.assertion.private.key.passphrase) does not open it") from None
    algorithm = settings.algorithm.upper()
    if algorithm == "RS256" and isinstance(key, rsa.RSAPrivateKey):
        return key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    if algorithm == "ES256" and isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1":
        # JWS wants r || s, 32 bytes each, not the DER sequence
        r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
    raise ConfigError(f"sasl.oauthbearer.assertion.algorithm={algorithm} does not match the key in "
                      "sasl.oauthbearer.assertion.private.key.file")


def make_assertion(settings: AssertionSettings, now: float | None = None) -> str:
    """The assertion to post with ``grant_type=jwt-bearer``."""
    if settings.file:
        text = _read(settings.file, "sasl.oauthbearer.assertion.file").decode("utf-8", "replace").strip()
        if text.count(".") != 2:
            raise AuthenticationError("sasl.oauthbearer.assertion.file does not hold a JWT (three dot-separated parts)")
        return text
    settings.check()
    now = time.time() if now is None else now
    extra_header, extra_payload = _template(settings.template_file)
    header = {**extra_header, "alg": settings.algorithm.upper(), "typ": "JWT"}
    payload: dict[str, Any] = {**extra_payload}
    for claim, value in (("iss", settings.iss), ("sub", settings.sub), ("aud", settings.aud)):
        if value:
            payload[claim] = value
    payload.update(iat=int(now), exp=int(now) + settings.exp_seconds, nbf=int(now) - settings.nbf_seconds)
    if settings.include_jti:
        payload["jti"] = str(uuid.uuid4())
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}".encode()
    return f"{signing_input.decode()}.{b64url(_sign(settings, signing_input))}"
