"""How to reach a ZooKeeper ensemble: `zookeeper.*` properties, validated once, the digest kept secret."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.zookeeper.errors import ZooKeeperConfigError

# The property names, Kafka's where Kafka has one (a broker's zookeeper.connect, its timeouts).
CONNECT = "zookeeper.connect"
SESSION_TIMEOUT = "zookeeper.session.timeout.ms"
CONNECTION_TIMEOUT = "zookeeper.connection.timeout.ms"
LISTENER = "zookeeper.listener.name"
# Digest ACLs' credentials; "password" in the name keeps the value out of Spark's plans and UI
# (spark.redaction.regex), as for Kafka's own sasl.password.
DIGEST_USER = "zookeeper.digest.username"
DIGEST_PASSWORD = "zookeeper.digest.password"
KEYS = (CONNECT, SESSION_TIMEOUT, CONNECTION_TIMEOUT, LISTENER, DIGEST_USER, DIGEST_PASSWORD)
SECRET_KEYS = frozenset({DIGEST_PASSWORD})

DEFAULT_PORT = 2181
_HOST_PORT = re.compile(r"^(\[[^\]]+\]|[^:/\s,\[\]]+)(?::(\d+))?$")
_CHROOT = re.compile(r"^(/[^/\s]+)+$")


def split_connect(text: str, key: str = CONNECT) -> tuple[tuple[tuple[str, int], ...], str]:
    """`host:port[,host:port...][/chroot]` as ((host, port), ...) and the chroot ('' for the root).

    `key` is the option's name as the user wrote it, for messages.
    """
    value = text.strip()
    slash = value.find("/")
    hosts_text, chroot = (value, "") if slash < 0 else (value[:slash], value[slash:].rstrip("/"))
    if chroot and not _CHROOT.match(chroot):
        raise ZooKeeperConfigError(f"{key}: chroot {chroot!r} of {text!r} is not a path like /kafka")
    hosts = []
    for item in hosts_text.split(","):
        m = _HOST_PORT.match(item.strip())
        if not m:
            raise ZooKeeperConfigError(f"{key}: {item.strip()!r} in {text!r} is not host:port "
                                       "(expected host:port[,host:port...][/chroot])")
        port = int(m.group(2) or DEFAULT_PORT)
        if not 0 < port < 65536:
            raise ZooKeeperConfigError(f"{key}: port {port} in {text!r} is out of range")
        hosts.append((m.group(1).strip("[]"), port))
    return tuple(hosts), chroot


def _ms(props: Mapping[str, Any], key: str, default: int, prefix: str) -> int:
    value = props.get(key, default)
    try:
        number = int(str(value).strip()) if not isinstance(value, bool) else -1
    except ValueError:
        number = -1
    if number < 1:
        raise ZooKeeperConfigError(f"{prefix}{key} must be a positive number of milliseconds, got {value!r}")
    return number


@dataclass(frozen=True)
class ZooKeeperSettings:
    """An ensemble's address and the session's timeouts; `digest` is `user:password` for digest ACLs."""

    connect: str
    session_timeout_ms: int = 18000
    connection_timeout_ms: int = 10000
    listener: str | None = None
    digest: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        split_connect(self.connect)
        if self.digest is not None and ":" not in self.digest:
            raise ZooKeeperConfigError("a digest credential is user:password (the value is not shown)")

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], prefix: str = "") -> ZooKeeperSettings | None:
        """Settings from `zookeeper.*` properties; None without `zookeeper.connect`; unknown names refused.

        `prefix` is how the user spells the names (`kafka.` for a Spark option), for messages.
        """
        given = {k.strip(): v for k, v in props.items() if k.strip().startswith("zookeeper.")}
        unknown = sorted(set(given) - set(KEYS))
        if unknown:
            raise ZooKeeperConfigError(f"unknown ZooKeeper setting {prefix + unknown[0]!r}; known: "
                                       f"{', '.join(prefix + k for k in KEYS)}")
        if not str(given.get(CONNECT) or "").strip():
            if len(given) > (CONNECT in given):
                raise ZooKeeperConfigError(f"{', '.join(prefix + k for k in sorted(given))} given without "
                                           f"{prefix}{CONNECT}")
            return None
        connect = str(given[CONNECT]).strip()
        split_connect(connect, prefix + CONNECT)
        user, password = given.get(DIGEST_USER), given.get(DIGEST_PASSWORD)
        if (user is None) != (password is None) or (user is not None and (not str(user) or ":" in str(user))):
            raise ZooKeeperConfigError(f"digest ACLs need both {prefix}{DIGEST_USER} (a name without ':') and "
                                       f"{prefix}{DIGEST_PASSWORD}")
        digest = None if user is None else f"{user}:{password}"
        listener = given.get(LISTENER)
        return cls(connect=connect,
                   session_timeout_ms=_ms(given, SESSION_TIMEOUT, cls.session_timeout_ms, prefix),
                   connection_timeout_ms=_ms(given, CONNECTION_TIMEOUT, cls.connection_timeout_ms, prefix),
                   listener=str(listener).strip() if listener else None,
                   digest=digest)

    @property
    def hosts(self) -> tuple[tuple[str, int], ...]:
        return split_connect(self.connect)[0]

    @property
    def chroot(self) -> str:
        return split_connect(self.connect)[1]

    @property
    def ensemble(self) -> str:
        """The connection string as messages show it (it holds no credentials)."""
        return self.connect
