"""Broker registrations (`/brokers/ids/<id>`) and the choice of the listener a client connects to."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.zookeeper.errors import ZooKeeperDataError
from kafka_spark.zookeeper.session import ZooKeeperSession
from kafka_spark.zookeeper.settings import ZooKeeperSettings

IDS_PATH = "/brokers/ids"
_ENDPOINT = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[^\]]*\]|[^:]*):(-?\d+)$")


@dataclass(frozen=True)
class Endpoint:
    """One listener of a broker: its name, security protocol and address."""

    listener: str
    protocol: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class BrokerRegistration:
    """What a broker wrote at `/brokers/ids/<id>` (versions 1 to 5)."""

    node_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    version: int = 0
    extra: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    def endpoint(self, security_protocol: str, listener: str | None = None) -> Endpoint:
        """The endpoint named `listener`, else the one speaking `security_protocol`."""
        if listener:
            for ep in self.endpoints:
                if ep.listener.upper() == listener.upper():
                    return ep
            raise ZooKeeperDataError(
                f"broker {self.node_id} has no listener {listener!r} (zookeeper.listener.name); it registers "
                f"{self._describe()}")
        matching = [ep for ep in self.endpoints if ep.protocol.upper() == security_protocol.upper()]
        if not matching:
            raise ZooKeeperDataError(
                f"broker {self.node_id} has no listener for security.protocol={security_protocol}; it registers "
                f"{self._describe()}; set security.protocol or zookeeper.listener.name to one of them")
        # Several listeners may speak one protocol (INTERNAL and EXTERNAL, both PLAINTEXT): the one named
        # like the protocol is Kafka's default client listener; else the first, in the broker's order.
        named = [ep for ep in matching if ep.listener.upper() == security_protocol.upper()]
        return (named or matching)[0]

    def _describe(self) -> str:
        return ", ".join(f"{ep.listener} ({ep.protocol}) at {ep.address}" for ep in self.endpoints) or "none"


def parse_registration(node_id: int, data: bytes) -> BrokerRegistration:
    """A broker's registration JSON; a `ZooKeeperDataError` when it is not one."""
    try:
        raw = json.loads(data)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        protocols = {str(k): str(v) for k, v in (raw.get("listener_security_protocol_map") or {}).items()}
        endpoints = []
        for text in raw.get("endpoints") or []:
            m = _ENDPOINT.match(str(text))
            if not m:
                raise ValueError(f"endpoint {text!r}")
            name = m.group(1)
            endpoints.append(Endpoint(name, protocols.get(name, name), m.group(2).strip("[]"), int(m.group(3))))
        if not endpoints and raw.get("host") and int(raw.get("port", -1)) > 0:
            # Version 1 (Kafka 0.8): one PLAINTEXT address, no endpoint list.
            endpoints.append(Endpoint("PLAINTEXT", "PLAINTEXT", str(raw["host"]), int(raw["port"])))
        rack = raw.get("rack")
        return BrokerRegistration(node_id, tuple(endpoints), None if rack is None else str(rack),
                                  int(raw.get("version", 0)), raw)
    except (ValueError, TypeError) as exc:
        raise ZooKeeperDataError(f"{IDS_PATH}/{node_id} is not a broker registration ({exc})") from None


def registered_brokers(session: ZooKeeperSession) -> dict[int, BrokerRegistration]:
    """Every broker registered now, by id (a broker that leaves meanwhile is left out)."""
    out = {}
    for child in session.children(IDS_PATH) or []:
        if not child.isdigit():
            continue
        data = session.get(f"{IDS_PATH}/{child}")
        if data is not None:
            out[int(child)] = parse_registration(int(child), data)
    return out


def bootstrap_endpoints(session: ZooKeeperSession, security_protocol: str,
                        listener: str | None = None) -> list[tuple[str, int]]:
    """(host, port) of every registered broker's chosen listener, by broker id; empty when none is up."""
    brokers = registered_brokers(session)
    chosen = [brokers[i].endpoint(security_protocol, listener) for i in sorted(brokers)]
    return [(ep.host, ep.port) for ep in chosen]


def discover_bootstrap(settings: ZooKeeperSettings, security_protocol: str) -> list[tuple[str, int]]:
    """The addresses to bootstrap a Kafka client from, read from the ensemble now."""
    with ZooKeeperSession(settings) as session:
        return bootstrap_endpoints(session, security_protocol, settings.listener)


def with_discovered_bootstrap(props: Mapping[str, Any]) -> dict[str, Any]:
    """Client properties with `bootstrap.servers` read from ZooKeeper when only `zookeeper.connect` is given.

    `zookeeper.connect` stays: a client falls back to it when the brokers found now move. With no broker
    registered right now, the properties are returned as they are and the client asks again later.
    """
    out = dict(props)
    settings = ZooKeeperSettings.from_properties(out)
    if settings is None or str(out.get("bootstrap.servers") or "").strip():
        return out
    found = discover_bootstrap(settings, str(out.get("security.protocol") or "PLAINTEXT").strip().upper())
    if found:
        out["bootstrap.servers"] = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in found)
    return out
