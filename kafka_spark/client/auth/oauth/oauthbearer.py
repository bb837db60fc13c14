"""SASL/OAUTHBEARER (RFC 7628) as Kafka speaks it (KIP-255), and the unsecured test tokens of Kafka's login module.

The client sends one message, ``n,,<SOH>auth=Bearer <token><SOH>[key=value<SOH>...]<SOH>``; a broker that
refuses the token answers with a JSON error, the client acknowledges it with a single SOH, and the broker
then fails the exchange. No I/O here.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Mapping

from kafka_spark.errors import ConfigError

SEPARATOR = "\x01"
# RFC 7628 §3.1 as Kafka checks it: letters for keys, printable ASCII and spaces for values; "auth" is the token
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")
UNSECURED_PREFIX = "unsecuredLogin"


def check_extensions(extensions: Mapping[str, str], option_prefix: str = "") -> dict[str, str]:
    """`extensions` if every name and value is one the broker accepts; else a `ConfigError` naming the JAAS option
    (`option_prefix` + name) that set the bad one."""
    for key, value in extensions.items():
        option = f"sasl.jaas.config option {option_prefix}{key}" if option_prefix else f"SASL extension {key!r}"
        if not _EXTENSION_KEY.fullmatch(key) or key == "auth":
            raise ConfigError(f"{option}: {key!r} is not a valid SASL extension name (letters only, not 'auth')")
        if not _EXTENSION_VALUE.fullmatch(value):
            raise ConfigError(f"{option}: the value is not a valid SASL extension value (printable ASCII only)")
    return dict(extensions)


def initial_response(token: str, extensions: Mapping[str, str] | None = None, authzid: str = "") -> bytes:
    """The client's first (and only) OAUTHBEARER message."""
    parts = [f"n,{'a=' + authzid if authzid else ''},", f"auth=Bearer {token}"]
    parts += [f"{k}={v}" for k, v in sorted((extensions or {}).items())]
    return (SEPARATOR.join(parts) + SEPARATOR + SEPARATOR).encode()


class OAuthBearerMechanism:
    """OAUTHBEARER's client side for one token; `server_error` keeps the broker's JSON reason for a refusal."""

    name = "OAUTHBEARER"

    def __init__(self, token: str, extensions: Mapping[str, str] | None = None) -> None:
        self._token = token
        self._extensions = check_extensions(extensions or {})
        self.server_error: str | None = None

    def first(self) -> bytes:
        return initial_response(self._token, self._extensions)

    def respond(self, challenge: bytes) -> bytes | None:
        if not challenge or self.server_error is not None:
            return None
        # RFC 7628 §3.2.2: an error challenge is answered with %x01; the broker then ends the exchange
        self.server_error = _error_summary(challenge)
        return SEPARATOR.encode()

    def __repr__(self) -> str:
        return f"OAuthBearerMechanism(token=[hidden], extensions={sorted(self._extensions)})"


def _error_summary(challenge: bytes) -> str:
    try:
        error = json.loads(challenge.decode("utf-8", "replace"))
    except ValueError:
        return "the broker refused the token"
    if not isinstance(error, dict):
        return "the broker refused the token"
    # the JSON names a status and, for scope problems, the scope wanted; never the token
    return ", ".join(f"{k}={error[k]}" for k in ("status", "scope") if error.get(k)) or "the broker refused the token"


def b64url(data: bytes) -> str:
    """Unpadded base64url, as JWS parts are written."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _list_claim(value: str) -> list[str]:
    # The first character is the delimiter: "|a|b" -> ["a", "b"]. Split as Java's String.split does, which
    # drops trailing empty items but keeps inner ones (and gives [""] for nothing after the delimiter).
    if not value:
        return []
    items = value[1:].split(value[0])
    while len(items) > 1 and items[-1] == "":
        items.pop()
    return items


def unsecured_options(options: Mapping[str, str]) -> dict[str, str]:
    """The `unsecuredLogin*` options of a JAAS configuration."""
    return {k: v for k, v in options.items() if k.startswith(UNSECURED_PREFIX)}


def unsecured_token(options: Mapping[str, str], now: float | None = None) -> tuple[str, float, dict[str, str]]:
    """(token, expiry in epoch seconds, SASL extensions) as Kafka's unsecured login callback handler makes
    them from `unsecuredLogin*` options: an `alg: none` JWS with `iat`, `exp` and the configured claims."""
    now = time.time() if now is None else now
    try:
        lifetime = int(options.get(f"{UNSECURED_PREFIX}LifetimeSeconds", "3600"))
    except ValueError:
        raise ConfigError(f"sasl.jaas.config: {UNSECURED_PREFIX}LifetimeSeconds must be an integer") from None
    claims: dict[str, object] = {"exp": now + lifetime, "iat": now}
    extensions: dict[str, str] = {}
    for key, value in options.items():
        kind, _, claim = key.partition("_")
        if not claim:
            continue
        if kind == f"{UNSECURED_PREFIX}Extension":
            extensions[claim] = value
            continue
        if kind not in (f"{UNSECURED_PREFIX}StringClaim", f"{UNSECURED_PREFIX}NumberClaim",
                        f"{UNSECURED_PREFIX}ListClaim"):
            continue
        if claim in ("iat", "exp"):
            raise ConfigError(f"sasl.jaas.config: the '{claim}' claim cannot be set explicitly")
        if kind.endswith("StringClaim"):
            claims[claim] = value
        elif kind.endswith("NumberClaim"):
            try:
                claims[claim] = float(value)
            except ValueError:
                raise ConfigError(f"sasl.jaas.config: {key} must be a number") from None
        else:
            claims[claim] = _list_claim(value)
    principal = options.get(f"{UNSECURED_PREFIX}PrincipalClaimName", "").strip() or "sub"
    if not claims.get(principal):
        raise ConfigError(f"sasl.jaas.config: the unsecured token needs {UNSECURED_PREFIX}StringClaim_{principal} "
                          "(its principal)")
    header = b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{header}.{payload}.", now + lifetime, check_extensions(extensions, f"{UNSECURED_PREFIX}Extension_")


def jwt_claims(token: str) -> dict[str, object]:
    """The payload of a compact JWS, unverified (the broker verifies); {} when it is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return {}
    return claims if isinstance(claims, dict) else {}
