"""Renewing a `kinit` ticket cache as Java's Kafka client does (`KerberosLogin`): `sasl.kerberos.kinit.cmd -R`
once the ticket-granting ticket has lived `sasl.kerberos.ticket.renew.window.factor` (+ up to `.jitter`) of
its life, not sooner than `sasl.kerberos.min.time.before.relogin` after the last try unless it would expire
first. Keytab logins need none of this: MIT Kerberos gets their new tickets itself.

Java runs this on a login thread; here it is checked whenever a connection authenticates (as OAUTHBEARER
tokens are refreshed), so it costs nothing while no connection is opened or re-authenticated (KIP-368).
The ticket's times come from `klist`, run in the C locale and UTC so that its dates have one format.
"""

from __future__ import annotations

import logging
import os
import random
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from kafka_spark.client.auth.gssapi.credentials import KerberosLogin

log = logging.getLogger(__name__)

_KLIST_TIME = r"(\d\d/\d\d/\d\d \d\d:\d\d:\d\d)"
# "Valid starting  Expires  Service principal" rows of the realm's own ticket-granting ticket
_TGT_ROW = re.compile(rf"^{_KLIST_TIME}\s+{_KLIST_TIME}\s+krbtgt/([^@\s]+)@(\S+)\s*$\n?"
                      rf"(?:\s+renew until {_KLIST_TIME})?", re.M)
_TOOL_SECONDS = 30.0
_RECHECK_SECONDS = 10.0


@dataclass(frozen=True)
class TicketTimes:
    """A ticket-granting ticket's start and end, and how long it can be renewed (epoch seconds)."""

    start: float
    end: float
    renew_until: float | None


def _epoch(text: str) -> float:
    return datetime.strptime(text, "%m/%d/%y %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def tgt_times(klist_output: str) -> TicketTimes | None:
    """The times of the first ticket-granting ticket of its own realm in `klist` output (C locale, UTC)."""
    for match in _TGT_ROW.finditer(klist_output):
        start, end, realm, issuer, renew = match.groups()
        if realm == issuer:
            return TicketTimes(_epoch(start), _epoch(end), _epoch(renew) if renew else None)
    return None


def renewal_time(ticket: TicketTimes, window: float, min_wait: float, last_try: float | None, now: float) -> float:
    """When to renew (epoch seconds): at `window` of the ticket's life, not within `min_wait` of the last try
    unless the ticket would expire before that."""
    due = ticket.start + (ticket.end - ticket.start) * window
    if last_try is not None and due < last_try + min_wait < ticket.end:
        return last_try + min_wait
    return due if due < ticket.end else now


class CacheRenewal:
    """The renewal of one ticket cache in this process."""

    def __init__(self, cache: str | None, kinit: str, factor: float, jitter: float, min_wait: float) -> None:
        self._cache = cache
        self._kinit = kinit
        self._window = factor + jitter * random.random()
        self._min_wait = min_wait
        self._lock = threading.Lock()
        self._last_try: float | None = None
        self._next_check = 0.0  # no klist before this: the ticket read last is not due yet
        self._warned = False

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
        return subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=_TOOL_SECONDS, check=False)

    def _cache_args(self) -> list[str]:
        return ["-c", self._cache] if self._cache else []

    def ticket(self) -> TicketTimes | None:
        """The cache's ticket-granting ticket now (None: no cache, no ticket, or no klist beside kinit)."""
        klist = os.path.join(os.path.dirname(self._kinit), "klist")
        try:
            done = self._run([klist if os.path.isfile(klist) else "klist", *self._cache_args()])
        except (OSError, subprocess.TimeoutExpired):
            return None
        return tgt_times(done.stdout) if done.returncode == 0 else None

    def maybe_renew(self) -> None:
        """Renew the cache's ticket if Java's client would by now; failures are logged, as Java's are."""
        with self._lock:
            if time.time() < self._next_check:
                return
            ticket = self.ticket()
            now = time.time()
            if ticket is None or now >= ticket.end:
                # nothing to renew (a user's kinit may put a ticket there): look again a little later, not
                # at every connection
                self._next_check = now + _RECHECK_SECONDS
                return
            due = renewal_time(ticket, self._window, self._min_wait, self._last_try, now)
            if now < due:
                self._next_check = due
                return
            if ticket.renew_until is None or ticket.renew_until <= now:
                self._next_check = ticket.end
                if not self._warned:
                    self._warned = True
                    log.warning("the Kerberos ticket in %s cannot be renewed (run kinit before it ends at %s)",
                                self._cache or "the default ticket cache", time.ctime(ticket.end))
                return
            self._last_try = now
            try:
                done = self._run([self._kinit, "-R", *self._cache_args()])
            except (OSError, subprocess.TimeoutExpired) as exc:
                log.warning("renewing the Kerberos ticket with %s -R failed: %s", self._kinit, exc)
                return
            if done.returncode:
                log.warning("renewing the Kerberos ticket with %s -R failed (%d): %s", self._kinit, done.returncode,
                            " ".join(done.stderr.split())[-300:])
            else:
                log.info("renewed the Kerberos ticket in %s", self._cache or "the default ticket cache")


_RENEWALS: dict[tuple[object, ...], CacheRenewal] = {}
_RENEWALS_LOCK = threading.Lock()


def renewal_for(login: KerberosLogin, kinit: str, factor: float, jitter: float, min_wait_ms: int) -> CacheRenewal:
    """The process's renewal of the ticket cache `login` reads (one per cache and settings)."""
    cache = login.cache_name or os.environ.get("KRB5CCNAME") or None
    key = (cache or "", kinit, factor, jitter, min_wait_ms)
    with _RENEWALS_LOCK:
        renewal = _RENEWALS.get(key)
        if renewal is None:
            renewal = _RENEWALS[key] = CacheRenewal(cache, kinit, factor, jitter, min_wait_ms / 1000)
        return renewal
