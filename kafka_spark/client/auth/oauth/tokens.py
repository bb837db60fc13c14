"""Login tokens for SASL/OAUTHBEARER: one per login configuration and process, refreshed before it expires.

Every connection of an executor process that uses the same login shares one token, fetched once and
refreshed on the schedule of Java's `ExpiringCredentialRefreshingLogin`: at 80-85% of its lifetime
(`sasl.login.refresh.window.factor` + up to `.jitter`), no later than `.buffer.seconds` before expiry
and no sooner than `.min.period.seconds` from now; a failed refresh keeps the old token while it is valid
and is retried every 10 seconds.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafka_spark.errors import AuthenticationError

_RETRY_SECONDS = 10.0


@dataclass(frozen=True)
class Token:
    """An access token, its lifetime in epoch seconds and the SASL extensions sent with it."""

    value: str = field(repr=False)
    expires_at: float
    issued_at: float
    extensions: Mapping[str, str] = field(default_factory=dict)
    principal: str = ""

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) >= self.expires_at


@dataclass(frozen=True)
class RefreshRules:
    """Java's `sasl.login.refresh.*` settings."""

    window_factor: float = 0.8
    window_jitter: float = 0.05
    min_period_s: float = 60.0
    buffer_s: float = 300.0


def refresh_time(token: Token, rules: RefreshRules, now: float, draw: float) -> float:
    """When to fetch the next token (epoch seconds); `draw` is a uniform random number in [0, 1)."""
    if now > token.expires_at:
        return now + _RETRY_SECONDS
    share = rules.window_factor + rules.window_jitter * draw
    if now + rules.min_period_s + rules.buffer_s > token.expires_at:
        # a short-lived token: the buffers cannot both hold, refresh within its window
        when = now + (token.expires_at - now) * share
    else:
        proposed = token.issued_at + (token.expires_at - token.issued_at) * share
        if proposed > token.expires_at - rules.buffer_s:
            when = token.expires_at - rules.buffer_s
        else:
            when = max(proposed, now + rules.min_period_s)
    # Java's last guard: a time already past (a clock that moved) becomes a retry soon
    return when if when >= now else now + _RETRY_SECONDS


class RefreshingToken:
    """A token source with Java's refresh schedule; `current()` is safe from many threads."""

    def __init__(self, fetch: Callable[[], Token], rules: RefreshRules, what: str) -> None:
        self._fetch = fetch
        self._rules = rules
        self._what = what
        self._lock = threading.Lock()
        self._token: Token | None = None
        self._refresh_at = 0.0
        self.fetches = 0

    def current(self) -> Token:
        """The token to send now: the cached one until its refresh time, then a new one."""
        with self._lock:
            now = time.time()
            if self._token is not None and now < self._refresh_at:
                return self._token
            try:
                token = self._fetch()
            except AuthenticationError as exc:
                if self._token is not None and not self._token.expired(now):
                    self._refresh_at = now + _RETRY_SECONDS  # keep the valid one, try again soon
                    return self._token
                # the same type, saying which login failed (one line, no secret: the sources never echo one)
                failure = type(exc)(f"{self._what}: {exc}")
                failure.__dict__.update(exc.__dict__)  # typed details (a redirect's target, ...) stay readable
                raise failure from None
            self.fetches += 1
            if token.expired(now):
                raise AuthenticationError(f"{self._what}: the new token has already expired (exp "
                                          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(token.expires_at))})")
            self._token = token
            self._refresh_at = refresh_time(token, self._rules, now, random.random())
            return token

    def __repr__(self) -> str:
        return f"RefreshingToken({self._what}, fetches={self.fetches})"


_SHARED: dict[str, RefreshingToken] = {}
_SHARED_LOCK = threading.Lock()


def shared(key_parts: Mapping[str, object], make: Callable[[], RefreshingToken]) -> RefreshingToken:
    """The process's token source for one login configuration (keyed by a digest, so no secret is kept
    as a dictionary key)."""
    digest = hashlib.sha256(repr(sorted((k, repr(v)) for k, v in key_parts.items())).encode()).hexdigest()
    with _SHARED_LOCK:
        source = _SHARED.get(digest)
        if source is None:
            source = _SHARED[digest] = make()
        return source
