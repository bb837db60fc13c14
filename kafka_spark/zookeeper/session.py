"""One kazoo session with bounded waits: opening it, reading and writing znodes, typed errors.

kazoo reconnects on its own (its connection retry) and re-runs an operation cut by a connection loss
or a session expiry (its command retry), which covers a server restart and an ensemble member going
away. Both retries are bounded by `zookeeper.connection.timeout.ms`, so a dead ensemble is a typed
one-line error, never a hang. The sessions here are short-lived: nothing ephemeral is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from kafka_spark.zookeeper.errors import (
    ZooKeeperAccessError,
    ZooKeeperDataError,
    ZooKeeperError,
    ZooKeeperUnreachableError,
)
from kafka_spark.zookeeper.settings import ZooKeeperSettings

T = TypeVar("T")
log = logging.getLogger(__name__)
# kazoo warns on every refused reconnect; with no logging configured Python would print each one to
# stderr, burying the one-line error. They stay visible to applications that configure logging.
_KAZOO_LOG = logging.getLogger("kafka_spark.zookeeper.kazoo")
_KAZOO_LOG.addHandler(logging.NullHandler())


class ZooKeeperSession:
    """A connected kazoo client for one ensemble; use as a context manager."""

    def __init__(self, settings: ZooKeeperSettings) -> None:
        self.settings = settings
        self._client: Any = None

    def __enter__(self) -> ZooKeeperSession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def ensemble(self) -> str:
        return self.settings.ensemble

    def open(self) -> None:
        """Connect, waiting at most the connection timeout; `ZooKeeperUnreachableError` otherwise."""
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError
        from kazoo.retry import KazooRetry
        from kazoo.security import READ_ACL_UNSAFE, make_digest_acl

        s = self.settings
        wait_s = s.connection_timeout_ms / 1000
        auth, acl = None, None
        if s.digest:
            user, _, password = s.digest.partition(":")
            auth = [("digest", s.digest)]
            # As Kafka's secure ACLs: what this session creates is writable by its user, readable by all.
            acl = [make_digest_acl(user, password, all=True), *READ_ACL_UNSAFE]
        client = KazooClient(
            hosts=s.connect, timeout=s.session_timeout_ms / 1000, auth_data=auth, default_acl=acl,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            command_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, deadline=wait_s),
            logger=_KAZOO_LOG)
        client.add_listener(self._on_state)
        try:
            client.start(timeout=wait_s)
        except KazooTimeoutError:
            client.close()
            raise ZooKeeperUnreachableError(
                f"ZooKeeper ensemble {s.ensemble} is unreachable: no member answered within {wait_s:g}s "
                f"(zookeeper.connection.timeout.ms)") from None
        self._client = client

    def _on_state(self, state: str) -> None:
        # Called on kazoo's thread: only log. SUSPENDED = connection lost (kazoo is reconnecting),
        # LOST = session expired (the command retry starts a new one).
        log.info("ZooKeeper %s: session %s", self.ensemble, state)

    def close(self) -> None:
        """End the session (idempotent)."""
        client, self._client = self._client, None
        if client is not None:
            try:
                client.stop()
            finally:
                client.close()

    def _run(self, what: str, path: str, op: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        from kazoo.exceptions import (
            AuthFailedError,
            ConnectionLoss,
            KazooException,
            NoAuthError,
            OperationTimeoutError,
            SessionExpiredError,
        )
        from kazoo.retry import RetryFailedError

        if self._client is None:
            raise ZooKeeperError(f"ZooKeeper {self.ensemble}: session not open")
        try:
            return self._client.retry(op, *args, **kwargs)
        except NoAuthError:
            raise ZooKeeperAccessError(
                f"ZooKeeper {self.ensemble}: an ACL does not allow this session to {what} {path}; give "
                "zookeeper.digest.username and zookeeper.digest.password of a user the ACL admits") from None
        except AuthFailedError:
            raise ZooKeeperAccessError(f"ZooKeeper {self.ensemble} refused the session's credentials "
                                       "(zookeeper.digest.username / zookeeper.digest.password)") from None
        except (RetryFailedError, ConnectionLoss, OperationTimeoutError, SessionExpiredError):
            raise ZooKeeperUnreachableError(
                f"ZooKeeper ensemble {self.ensemble} did not answer ({what} {path}) within "
                f"{self.settings.connection_timeout_ms / 1000:g}s") from None
        except KazooException as exc:
            raise ZooKeeperError(f"ZooKeeper {self.ensemble}: cannot {what} {path}: "
                                 f"{type(exc).__name__}") from None

    def get(self, path: str) -> bytes | None:
        """The data of `path`, or None when it does not exist."""
        from kazoo.exceptions import NoNodeError

        def read() -> bytes | None:
            try:
                return self._client.get(path)[0]
            except NoNodeError:
                return None

        return self._run("read", path, read)

    def children(self, path: str) -> list[str] | None:
        """The children of `path`, sorted, or None when it does not exist."""
        from kazoo.exceptions import NoNodeError

        def read() -> list[str] | None:
            try:
                return sorted(self._client.get_children(path))
            except NoNodeError:
                return None

        return self._run("list", path, read)

    def put(self, path: str, data: bytes) -> None:
        """Set `path` to `data`, creating it and its parents when missing."""
        from kazoo.exceptions import NodeExistsError, NoNodeError

        def write() -> None:
            try:
                self._client.set(path, data)
                return
            except NoNodeError:
                pass
            try:
                self._client.create(path, data, makepath=True)
            except NodeExistsError:  # created meanwhile
                self._client.set(path, data)
            except NoNodeError:
                raise ZooKeeperDataError(f"ZooKeeper {self.ensemble}: cannot create {path}: the chroot "
                                         f"{self.settings.chroot or '/'} does not exist") from None

        self._run("write", path, write)
