"""OAuth 2 access tokens from a token endpoint (KIP-768's client-credentials flow), or from a file.

`fetch_token` posts ``grant_type=client_credentials`` with the client id and secret in HTTP Basic (URL-encoded
first with `sasl.oauthbearer.header.urlencode`, as RFC 6749 §2.3.1 asks and Java's client does on request),
retries transport failures and the answers Java's client retries (all but 400-407, 409-415, 501 and 505) with
backoff within the configured bounds, and returns the access token. A ``file:`` URL names a file that holds the
token (Kafka's client reads it the same way). Secrets never reach an error message.

Redirects are refused, not followed: urllib would repeat the Authorization header, the client secret in it, to
whatever host or ``http:`` address the answer names. Over HTTPS the caller's context decides which CAs are
trusted (`token_tls`); one that skips the certificate or host name check is refused.
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
from http.client import HTTPMessage
from pathlib import Path
from typing import IO

from kafka_spark.errors import AuthenticationError, ConfigError


class TokenEndpointError(AuthenticationError):
    """The token endpoint could not be reached or refused the client's credentials."""


class TokenEndpointTlsError(TokenEndpointError):
    """TLS to the token endpoint failed: its certificate is not signed by a trusted CA, or does not name its host.
    Nothing was sent."""


class TokenEndpointRedirectError(TokenEndpointError):
    """The token endpoint answered with a redirect, which is not followed; `endpoint` and `target` are the two
    addresses without credentials, query or fragment."""

    def __init__(self, message: str, endpoint: str = "", target: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.target = target
        self.status = status


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
    if context is not None and not (context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED):
        raise ConfigError("the token endpoint's TLS context must verify its certificate and host name")
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
    where = f"token endpoint {safe_url(request.url)}"
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
    opener = urllib.request.build_opener(_NoRedirects(), urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(http, timeout=timeout) as answer:
            raw = answer.read(1 << 20)
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            raise _redirect_error(request.url, exc, where) from None
        detail = _error_detail(exc)
        if exc.code not in _FINAL_STATUSES:
            raise _Retriable(f"HTTP {exc.code}{detail}") from None
        raise TokenEndpointError(f"{where} refused the request: HTTP {exc.code}{detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        # a handshake failure comes wrapped in URLError; one on a later read comes bare
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, ssl.SSLError):
            raise _tls_error(reason, where) from None
        raise _Retriable(f"cannot reach it ({reason})") from None
    try:
        answer_json = json.loads(raw)
        token = answer_json["access_token"]
    except (ValueError, KeyError, TypeError):
        raise TokenEndpointError(f"{where} answered without an access_token") from None
    if not isinstance(token, str) or not token:
        raise TokenEndpointError(f"{where} answered an empty access_token")
    return token


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: HTTPMessage, newurl: str) -> urllib.request.Request | None:
        return None  # urllib then raises the 3xx answer as an HTTPError


def _redirect_error(url: str, exc: urllib.error.HTTPError, where: str) -> TokenEndpointRedirectError:
    location = exc.headers.get("Location") if exc.headers else None
    target = safe_url(urllib.parse.urljoin(url, location)) if location else ""
    to = f"redirecting to {target}" if target else "a redirect without a Location"
    return TokenEndpointRedirectError(
        f"{where} answered HTTP {exc.code}, {to}; redirects are not followed so that the client credentials go "
        "to no other address: set sasl.oauthbearer.token.endpoint.url to the URL that issues the token",
        safe_url(url), target, exc.code)


def _tls_error(exc: ssl.SSLError, where: str) -> TokenEndpointTlsError:
    detail = exc.verify_message if isinstance(exc, ssl.SSLCertVerificationError) else exc.reason
    return TokenEndpointTlsError(
        f"{where}: TLS failed ({detail}); the token endpoint is trusted through the ssl.truststore.* options "
        "inside sasl.jaas.config, else the system's CAs (not the brokers' ssl.truststore.*), and its "
        "certificate must name its host")


def safe_url(url: str) -> str:
    """`url` as scheme://host:port/path: no user info, query or fragment, which may hold credentials."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname or ""
    return f"{parts.scheme}://{host}{':' + str(port) if port else ''}{parts.path}"


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
