"""Schema-registry connection settings, read from `schema.registry.*` options named after Confluent's client
configuration; secrets never appear in their repr or in an error."""

from __future__ import annotations

import difflib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_spark.errors import ConfigError

PREFIX = "schema.registry."
_URL = PREFIX + "url"
_USER_INFO = PREFIX + "basic.auth.user.info"
_CREDENTIALS_SOURCE = PREFIX + "basic.auth.credentials.source"
_TOKEN = PREFIX + "bearer.auth.token"
_BEARER_SOURCE = PREFIX + "bearer.auth.credentials.source"
_LOGICAL_CLUSTER = PREFIX + "bearer.auth.logical.cluster"
_IDENTITY_POOL = PREFIX + "bearer.auth.identity.pool.id"
_CA = PREFIX + "ssl.ca.location"
_CERTIFICATE = PREFIX + "ssl.certificate.location"
_KEY = PREFIX + "ssl.key.location"
_KEY_PASSWORD = PREFIX + "ssl.key.password"
_HOST_CHECK = PREFIX + "ssl.endpoint.identification.algorithm"
_TIMEOUT = PREFIX + "request.timeout.ms"
_RETRIES = PREFIX + "max.retries"
_BACKOFF = PREFIX + "retry.backoff.ms"
_BACKOFF_MAX = PREFIX + "retry.backoff.max.ms"

# The client certificate's options, for the errors that name them.
CERTIFICATE_OPTION, KEY_OPTION, KEY_PASSWORD_OPTION = _CERTIFICATE, _KEY, _KEY_PASSWORD
OPTIONS = (_URL, _USER_INFO, _CREDENTIALS_SOURCE, _TOKEN, _BEARER_SOURCE, _LOGICAL_CLUSTER, _IDENTITY_POOL, _CA,
           _CERTIFICATE, _KEY, _KEY_PASSWORD, _HOST_CHECK, _TIMEOUT, _RETRIES, _BACKOFF, _BACKOFF_MAX)
# Options whose values are secret (the URL may carry `user:password@`): hide them wherever options are shown.
SECRET_OPTIONS = (_URL, _USER_INFO, _TOKEN, _KEY_PASSWORD)

_MAX_INT = 2**31 - 1


@dataclass(frozen=True)
class RegistrySettings:
    """How to reach a schema registry. `urls` hold no credentials; the secret fields are left out of repr."""

    urls: tuple[str, ...]
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    logical_cluster: str | None = None
    identity_pool_id: str | None = None
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    timeout_ms: int = 30000
    max_retries: int = 3
    retry_backoff_ms: int = 1000
    retry_backoff_max_ms: int = 20000

    def __repr__(self) -> str:
        auth = "basic" if self.username is not None else "bearer" if self.bearer_token is not None else None
        shown = (f"urls={self.urls!r}, auth={auth!r}, ca_location={self.ca_location!r}, "
                 f"certificate_location={self.certificate_location!r}, key_location={self.key_location!r}, "
                 f"check_hostname={self.check_hostname}, timeout_ms={self.timeout_ms}, "
                 f"max_retries={self.max_retries}, retry_backoff_ms={self.retry_backoff_ms}, "
                 f"retry_backoff_max_ms={self.retry_backoff_max_ms}")
        return f"RegistrySettings({shown})"

    __str__ = __repr__


def registry_settings(options: Mapping[str, str]) -> RegistrySettings | None:
    """Settings from the `schema.registry.*` entries of `options` (keys in any case; other keys are ignored);
    None when there is no `schema.registry.url`. ConfigError names an unknown or invalid option."""
    opts: dict[str, str] = {}
    for given, value in options.items():
        name = given.strip().lower()
        if not name.startswith(PREFIX):
            continue
        if name not in OPTIONS:
            close = difflib.get_close_matches(name, OPTIONS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown schema registry option {given!r}{hint}")
        opts[name] = value
    if not opts.get(_URL, "").strip():
        return None
    urls, url_user = _urls(opts[_URL])
    username, password = _basic_auth(opts, url_user)
    token = opts.get(_TOKEN) or None
    bearer_source = opts.get(_BEARER_SOURCE, "STATIC_TOKEN").strip().upper()
    if bearer_source != "STATIC_TOKEN":
        raise ConfigError(f"{_BEARER_SOURCE} supports only STATIC_TOKEN (with {_TOKEN})")
    if _BEARER_SOURCE in opts and token is None:
        raise ConfigError(f"{_BEARER_SOURCE}=STATIC_TOKEN needs {_TOKEN}")
    if token is not None and username is not None:
        raise ConfigError(f"set either basic authentication or {_TOKEN}, not both")
    certificate = opts.get(_CERTIFICATE) or None
    key = opts.get(_KEY) or None
    key_password = opts.get(_KEY_PASSWORD) or None
    if certificate is None and (key is not None or key_password is not None):
        raise ConfigError(f"{_KEY} and {_KEY_PASSWORD} need {_CERTIFICATE}")
    algorithm = opts.get(_HOST_CHECK, "https").strip().lower()
    if algorithm not in ("https", ""):
        raise ConfigError(f"{_HOST_CHECK} must be 'https' (check the host name) or empty (do not), "
                          f"not {opts[_HOST_CHECK]!r}")
    return RegistrySettings(
        urls=urls, username=username, password=password, bearer_token=token,
        logical_cluster=opts.get(_LOGICAL_CLUSTER) or None, identity_pool_id=opts.get(_IDENTITY_POOL) or None,
        ca_location=opts.get(_CA) or None, certificate_location=certificate, key_location=key,
        key_password=key_password, check_hostname=algorithm == "https",
        timeout_ms=_int(opts, _TIMEOUT, 30000, 1), max_retries=_int(opts, _RETRIES, 3, 0),
        retry_backoff_ms=_int(opts, _BACKOFF, 1000, 0), retry_backoff_max_ms=_int(opts, _BACKOFF_MAX, 20000, 0))


def _urls(text: str) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    """The URLs without user info, and the first user info found in them."""
    urls: list[str] = []
    user: tuple[str, str] | None = None
    for number, raw in enumerate(text.split(","), 1):
        raw = raw.strip()
        if not raw:
            continue
        parts = urllib.parse.urlsplit(raw)
        host: str | None = parts.hostname
        try:
            port = parts.port
        except ValueError:
            host = None
        if parts.scheme.lower() not in ("http", "https") or not host:
            raise ConfigError(f"{_URL}: URL number {number} is not an http:// or https:// URL with a host")
        if parts.username is not None and user is None:
            user = (urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or ""))
        netloc = f"[{host}]" if ":" in host else host
        if port is not None:
            netloc += f":{port}"
        urls.append(urllib.parse.urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", "")))
    if not urls:
        raise ConfigError(f"{_URL} holds no URL")
    return tuple(urls), user


def _basic_auth(opts: Mapping[str, str], url_user: tuple[str, str] | None) -> tuple[str | None, str | None]:
    source = opts.get(_CREDENTIALS_SOURCE, "USER_INFO").strip().upper()
    info = opts.get(_USER_INFO)
    if source == "URL":
        if url_user is None:
            raise ConfigError(f"{_CREDENTIALS_SOURCE}=URL needs user:password@ in {_URL}")
        if info:
            raise ConfigError(f"{_CREDENTIALS_SOURCE}=URL takes the user from {_URL}; remove {_USER_INFO}")
        return url_user
    if source != "USER_INFO":
        raise ConfigError(f"{_CREDENTIALS_SOURCE} must be USER_INFO or URL, not {opts[_CREDENTIALS_SOURCE]!r}")
    if not info:
        # as Confluent's Python client does: user info in the URL counts when no user info option is set
        return url_user if url_user is not None else (None, None)
    if url_user is not None:
        raise ConfigError(f"{_USER_INFO} is set and {_URL} carries user info too; keep one")
    user, sep, password = info.partition(":")
    if not sep or not user:
        raise ConfigError(f"{_USER_INFO} must be 'user:password'")
    return user, password


def _int(opts: Mapping[str, str], name: str, default: int, low: int) -> int:
    text = opts.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {text!r}") from None
    if not low <= value <= _MAX_INT:
        raise ConfigError(f"{name} must be between {low} and {_MAX_INT}, not {value}")
    return value
