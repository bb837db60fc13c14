"""OAuth 2 access tokens from a token endpoint (KIP-768's client-credentials flow), or from a file.

`fetch_token` posts ``grant_type=client_credentials`` with the client id and secret in HTTP Basic (URL-encoded
first with `sasl.oauthbearer.header.urlencode`, as RFC 6749 §2.3.1 asks and Java's client does on request),
retries transport failures and the answers Java's client retries (all but 400-407, 409-415, 501 and 505) with
backoff within the configured bounds, and returns the access token. A ``file:`` URL names a file that holds the
token (Kafka's client reads it the same way). Secrets never reach an error message.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka_spark.errors import AuthenticationError, ConfigError


class TokenEndpointError(AuthenticationError):
    """The token endpoint could not be reached or refused the client's credentials."""


@dataclass(frozen=True)
class TokenRequest:
    """Where and how to ask for a token; `secret` is kept out of `repr`."""

    url: str
    client_id: str = ""
    secret: str = field(default="", repr=False)
    scope: str = ""
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 10.0
    backoff_s: float = 0.1
    backoff_max_s: float = 10.0
    urlencode_credentials: bool = False  # sasl.oauthbearer.header.urlencode
    extra_form: Mapping[str, str] = field(default_factory=dict, repr=False)


def fetch_token(request: TokenRequest, context: ssl.SSLContext | None = None) -> str:
    """The access token the endpoint issues for `request` (or the contents of a ``file:`` URL)."""
    url = urllib.parse.urlsplit(request.url)
    if url.scheme == "file":
        return _token_file(Path(urllib.request.url2pathname(url.path)))
    if url.scheme not in ("http", "https"):
        raise ConfigError(f"sasl.oauthbearer.token.endpoint.url must be an http(s) or file URL, got {url.scheme!r}")
    form = {"grant_type": "client_credentials", **request.extra_form}
    if request.scope:
        form["scope"] = request.scope
    headers = {"Accept": "application/json", "Cache-Control": "no-cache",
               "Content-Type": "application/x-www-form-urlencoded"}
    if request.client_id:
        quote = (lambda text: urllib.parse.quote(text, safe="")) if request.urlencode_credentials else str
        pair = f"{quote(request.client_id)}:{quote(request.secret)}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    body = urllib.parse.urlencode(form).encode()
    # As Java's retry: new attempts start only while sasl.login.retry.backoff.max.ms has not passed since the
    # first; each attempt itself is bounded by the connect/read timeouts.
    deadline = time.monotonic() + request.backoff_max_s
    delay = request.backoff_s
    where = f"token endpoint {url.scheme}://{url.hostname or ''}{':' + str(url.port) if url.port else ''}{url.path}"
    attempts = 0
    while True:
        attempts += 1
        try:
            return _post(request, body, headers, context, where)
        except _Retriable as exc:
            if time.monotonic() + delay > deadline:
                bound = int(request.backoff_max_s * 1000)
                raise TokenEndpointError(f"{where}: {exc} (gave up after {attempts} attempts, "
                                         f"sasl.login.retry.backoff.max.ms={bound})") from None
        time.sleep(delay)
        delay = min(delay * 2, request.backoff_max_s)


class _Retriable(Exception):
    pass


# The answers Java's client does not retry (HttpAccessTokenRetriever); every other failure is retried with backoff.
_FINAL_STATUSES = frozenset({*range(400, 408), *range(409, 416), 501, 505})


def _post(request: TokenRequest, body: bytes, headers: Mapping[str, str], context: ssl.SSLContext | None,
          where: str) -> str:
    http = urllib.request.Request(request.url, data=body, headers=dict(headers), method="POST")
    # urllib takes one timeout for the connect and each read; the longer bound applies to both
    timeout = max(request.connect_timeout_s, request.read_timeout_s)
    try:
        with urllib.request.urlopen(http, timeout=timeout, context=context) as answer:
            raw = answer.read(1 << 20)
    except urllib.error.HTTPError as exc:
        detail = _error_detail(exc)
        if exc.code not in _FINAL_STATUSES:
            raise _Retriable(f"HTTP {exc.code}{detail}") from None
        raise TokenEndpointError(f"{where} refused the request: HTTP {exc.code}{detail}") from None
    except ssl.SSLError as exc:
        raise TokenEndpointError(f"{where}: TLS failed ({exc.reason}); check ssl.truststore.* for the "
                                 "endpoint's CA") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, ssl.SSLError):
            raise TokenEndpointError(f"{where}: TLS failed ({reason.reason}); check ssl.truststore.* for the "
                                     "endpoint's CA") from None
        raise _Retriable(f"cannot reach it ({reason})") from None
    try:
        answer_json = json.loads(raw)
        token = answer_json["access_token"]
    except (ValueError, KeyError, TypeError):
        raise TokenEndpointError(f"{where} answered without an access_token") from None
    if not isinstance(token, str) or not token:
        raise TokenEndpointError(f"{where} answered an empty access_token")
    return token


def _error_detail(exc: urllib.error.HTTPError) -> str:
    # OAuth errors carry error / error_description (RFC 6749 §5.2); never echo anything else
    try:
        body = json.loads(exc.read(1 << 16))
    except (ValueError, OSError):
        return ""
    if not isinstance(body, dict):
        return ""
    parts = [str(body[k]) for k in ("error", "error_description") if isinstance(body.get(k), str)]
    return f" ({': '.join(parts)})" if parts else ""


def _token_file(path: Path) -> str:
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise TokenEndpointError(f"cannot read the token file {path}: {exc.strerror}") from None
    if not token:
        raise TokenEndpointError(f"the token file {path} is empty")
    return token
