"""A fault-injecting TCP proxy for tests: sits between the client and each broker on 127.0.0.1.

The proxy reads whole Kafka frames in both directions, so faults land at exact places: it resets a
connection mid-request or mid-response, stalls a response, drips it slowly, truncates it, delays
the handshake (the first response of a connection), or refuses connections. Which event is hit
follows a `FaultPlan`: every n-th eligible event (a schedule) or each with a seeded probability,
within a budget so that a retrying client can finish.

Brokers advertise their own addresses in Metadata and FindCoordinator responses; the proxy decodes
those with the package's codec and rewrites every broker address it proxies to the proxy's own,
so a client that bootstraps from a proxy never bypasses it. Every wait is bounded; `stop()` closes
everything.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.protocol import ApiKey, decode_response, encode_response

REQUEST_FAULTS = ("reset_request",)
RESPONSE_FAULTS = ("reset_response", "stall", "drip", "truncate")
CONNECT_FAULTS = ("refuse", "delay_handshake")
ALL_FAULTS = CONNECT_FAULTS + REQUEST_FAULTS + RESPONSE_FAULTS
_REWRITE = (ApiKey.METADATA, ApiKey.FIND_COORDINATOR)
_POLL_S = 0.2  # how often a blocked proxy thread looks at the stop flag


@dataclass
class FaultPlan:
    """Which events get which fault.

    `kinds` are the faults to use (see ALL_FAULTS). An event is a new connection, a request frame or
    a response frame; it is eligible if some kind applies to it and, for frames, its API is in
    `api_keys` (None: every API). With `every`, each `every`-th eligible event is hit (a schedule);
    otherwise each with `probability`, drawn from `seed` (connections, requests and responses are
    counted apart). At most `budget` faults are injected
    (None: no limit). `stall_s`, `delay_s`, `drip_bytes` and `drip_interval_s` shape the faults.
    """

    kinds: Sequence[str] = ()
    probability: float = 0.0
    every: int | None = None
    seed: int = 0
    budget: int | None = None
    api_keys: Iterable[int] | None = None
    stall_s: float = 5.0
    delay_s: float = 1.0
    drip_bytes: int = 256
    drip_interval_s: float = 0.02
    _rng: random.Random = field(init=False, repr=False)
    _seen: Counter = field(default_factory=Counter, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    injected: Counter = field(default_factory=Counter, init=False)

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(ALL_FAULTS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; choose from {ALL_FAULTS}")
        self._rng = random.Random(self.seed)
        self.api_keys = None if self.api_keys is None else frozenset(self.api_keys)

    @property
    def total(self) -> int:
        """Faults injected so far."""
        return sum(self.injected.values())

    def pick(self, candidates: Sequence[str], api_key: int | None = None) -> str | None:
        """The fault for this event, or None; counts it as injected."""
        kinds = [k for k in self.kinds if k in candidates]
        if not kinds or (api_key is not None and self.api_keys is not None and api_key not in self.api_keys):
            return None
        with self._lock:
            if self.budget is not None and self.total >= self.budget:
                return None
            # connections, requests and responses are counted apart, so a schedule reaches each of them
            self._seen[candidates[0]] += 1
            hit = self._seen[candidates[0]] % self.every == 0 if self.every else self._rng.random() < self.probability
            if not hit:
                return None
            kind = self._rng.choice(kinds)
            self.injected[kind] += 1
            return kind


class _Reset(Exception):
    """The link was torn down on purpose (a fault) or by either side."""


class _Link:
    """One client connection and its upstream connection, one thread per direction."""

    def __init__(self, proxy: FaultProxy, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream: socket.socket | None = None
        self.pending: dict[int, tuple[int, int]] = {}
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.first_response = True
        self.delay_first = 0.0

    # ---- socket helpers ------------------------------------------------------------------

    def _recv_exact(self, sock: socket.socket, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            if self.closed.is_set() or self.proxy.stopping.is_set():
                raise _Reset()
            try:
                chunk = sock.recv(n - len(out))
            except TimeoutError:
                continue
            except OSError:
                raise _Reset() from None
            if not chunk:
                raise _Reset()
            out += chunk
        return bytes(out)

    def _read_frame(self, sock: socket.socket) -> bytes:
        head = self._recv_exact(sock, 4)
        size = struct.unpack(">i", head)[0]
        if size < 0 or size > self.proxy.max_frame:
            raise _Reset()
        return head + self._recv_exact(sock, size)

    def _send(self, sock: socket.socket, data: bytes) -> None:
        try:
            sock.sendall(data)
        except OSError:
            raise _Reset() from None

    def _wait(self, seconds: float) -> None:
        # bounded sleep that ends early when the link or the proxy closes
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.closed.wait(min(_POLL_S, max(0.0, deadline - time.monotonic()))):
                raise _Reset()
            if self.proxy.stopping.is_set():
                raise _Reset()

    def close(self, reset: bool = False) -> None:
        """Close both sockets; with `reset`, with an RST (SO_LINGER 0) instead of a FIN."""
        self.closed.set()
        for sock in (self.client, self.upstream):
            if sock is None:
                continue
            with contextlib.suppress(OSError):
                if reset:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()

    # ---- the two directions ------------------------------------------------------------------

    def run(self) -> None:
        plan = self.proxy.plan
        fault = plan.pick(CONNECT_FAULTS)
        if fault == "refuse":
            self.close(reset=True)
            return
        self.delay_first = plan.delay_s if fault == "delay_handshake" else 0.0
        try:
            self.upstream = socket.create_connection(self.proxy.upstream, timeout=5)
        except OSError:
            self.close(reset=True)
            return
        for sock in (self.client, self.upstream):
            sock.settimeout(_POLL_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        back = threading.Thread(target=self._guard, args=(self._responses,), daemon=True)
        back.start()
        self._guard(self._requests)
        back.join(timeout=plan.stall_s + 5)

    def _guard(self, loop: Any) -> None:
        try:
            loop()
        except _Reset:
            pass
        finally:
            self.close()

    def _requests(self) -> None:
        assert self.upstream is not None
        while True:
            frame = self._read_frame(self.client)
            api_key, version, corr = struct.unpack_from(">hhi", frame, 4) if len(frame) >= 12 else (-1, -1, -1)
            with self.lock:
                self.pending[corr] = (api_key, version)
            if self.proxy.plan.pick(REQUEST_FAULTS, api_key) == "reset_request":
                self._send(self.upstream, frame[: max(1, len(frame) // 2)])
                self.close(reset=True)
                raise _Reset()
            self._send(self.upstream, frame)

    def _responses(self) -> None:
        assert self.upstream is not None
        plan = self.proxy.plan
        while True:
            frame = self._read_frame(self.upstream)
            corr = struct.unpack_from(">i", frame, 4)[0] if len(frame) >= 8 else -1
            with self.lock:
                api_key, version = self.pending.pop(corr, (-1, -1))
            if api_key in _REWRITE:
                frame = self.proxy.rewrite(api_key, version, frame)
            if self.first_response and self.delay_first:
                self._wait(self.delay_first)
            self.first_response = False
            fault = plan.pick(RESPONSE_FAULTS, api_key)
            if fault is None:
                self._send(self.client, frame)
            elif fault == "drip":
                for i in range(0, len(frame), plan.drip_bytes):
                    self._send(self.client, frame[i:i + plan.drip_bytes])
                    self._wait(plan.drip_interval_s)
            elif fault == "stall":
                self._wait(plan.stall_s)
                self.close(reset=True)
                raise _Reset()
            else:  # reset_response (RST) or truncate (FIN) half-way through the frame
                self._send(self.client, frame[: max(1, len(frame) // 2)])
                self.close(reset=fault == "reset_response")
                raise _Reset()


class FaultProxy:
    """A proxy for one broker at `upstream`; start with `start()`, address in `port` / `address`."""

    def __init__(self, upstream: tuple[str, int], plan: FaultPlan | None = None,
                 addresses: dict[tuple[str, int], tuple[str, int]] | None = None, max_frame: int = 256 << 20) -> None:
        self.upstream = upstream
        self.plan = plan or FaultPlan()
        # upstream address -> proxy address, shared by the proxies of one cluster
        self.addresses = addresses if addresses is not None else {}
        self.max_frame = max_frame
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL_S)
        self.port = self._listener.getsockname()[1]
        self.addresses[upstream] = ("127.0.0.1", self.port)
        self.connections = 0
        self._links: list[_Link] = []
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, name=f"fault-proxy-{self.port}", daemon=True)

    @property
    def address(self) -> str:
        """``127.0.0.1:port`` of the proxy."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        self._accept.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Close the listener and every link; wait (bounded) for the threads."""
        self.stopping.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        for link in list(self._links):
            link.close(reset=True)
        deadline = time.monotonic() + timeout
        for t in [self._accept, *self._threads]:
            t.join(timeout=max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            link = _Link(self, sock)
            self._links = [lk for lk in self._links if not lk.closed.is_set()] + [link]
            t = threading.Thread(target=link.run, daemon=True)
            self._threads = [th for th in self._threads if th.is_alive()] + [t]
            t.start()

    def rewrite(self, api_key: int, version: int, frame: bytes) -> bytes:
        """`frame` with every proxied broker address replaced by its proxy's (others are left alone)."""
        try:
            corr, body = decode_response(api_key, version, frame[4:])
        except Exception:  # a frame our codec cannot read is passed on untouched for the client to judge
            return frame
        if not _map_addresses(body, self.addresses):
            return frame
        return encode_response(api_key, version, corr, body)


def _map_addresses(value: Any, addresses: dict[tuple[str, int], tuple[str, int]]) -> bool:
    """Rewrite, in place, every {"host", "port"} struct found under `value`; True if any changed."""
    changed = False
    if isinstance(value, dict):
        if "host" in value and "port" in value and (value["host"], value["port"]) in addresses:
            value["host"], value["port"] = addresses[(value["host"], value["port"])]
            changed = True
        for v in value.values():
            changed |= _map_addresses(v, addresses)
    elif isinstance(value, list):
        for v in value:
            changed |= _map_addresses(v, addresses)
    return changed


class FaultyNetwork:
    """One `FaultProxy` per broker of a cluster, sharing a plan and the address map; `bootstrap` lists the proxies."""

    def __init__(self, brokers: Iterable[str], plan: FaultPlan | None = None) -> None:
        self.plan = plan or FaultPlan()
        addresses: dict[tuple[str, int], tuple[str, int]] = {}
        self.proxies = []
        for broker in brokers:
            host, _, port = broker.rpartition(":")
            self.proxies.append(FaultProxy((host, int(port)), self.plan, addresses))

    @property
    def bootstrap(self) -> str:
        return ",".join(p.address for p in self.proxies)

    def set_plan(self, plan: FaultPlan) -> None:
        """Use `plan` for every new event on every proxy (links already open switch too)."""
        self.plan = plan
        for p in self.proxies:
            p.plan = plan

    def start(self) -> FaultyNetwork:
        for p in self.proxies:
            p.start()
        return self

    def stop(self) -> None:
        for p in self.proxies:
            p.stop()

    def __enter__(self) -> FaultyNetwork:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["ALL_FAULTS", "FaultPlan", "FaultProxy", "FaultyNetwork"]
