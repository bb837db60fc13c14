"""The cluster as the client sees it: bootstrap, a connection per broker, cached metadata, routing, retries."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kafka_spark.client.auth.login import check_login
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.errors import (
    BootstrapUnreachableError,
    NoBrokersAvailableError,
    RetriesExhaustedError,
    UnknownTopicError,
)
from kafka_spark.client.metadata import ClusterMetadata, PartitionInfo, TopicInfo, TopicPartition, metadata_request
from kafka_spark.client.net.connection import BrokerConnection
from kafka_spark.client.net.retry import Backoff, RetryPolicy, is_retriable
from kafka_spark.client.net.tls import ssl_context
from kafka_spark.errors import AuthenticationError, KafkaConnectionError
from kafka_spark.errors.codes import (
    BrokerError,
    LeaderNotAvailableError,
    RetriableBrokerError,
    broker_error,
    error_for_code,
)
from kafka_spark.protocol import ApiKey

T = TypeVar("T")
log = logging.getLogger(__name__)

UNKNOWN_TOPIC_OR_PARTITION = 3
# topic-level metadata errors worth waiting out (a topic being created, a leader being elected)
_UNKNOWN_TOPIC_ATTEMPTS = 3
# A broker that has just started answers a topic it would create on demand with INVALID_REPLICATION_FACTOR until
# it has seen the live brokers (a ZooKeeper-mode broker restarted on a new port did, for a topic that exists):
# waited out for a few attempts (~5 s with the default backoff), as Java's producer waits for the topic's metadata.
INVALID_REPLICATION_FACTOR = 38
_SETTLING_ATTEMPTS = 8
# The property that bounds how long a cluster that never took a connection is tried: in the Java client, the
# longest a connection setup waits.
BOOTSTRAP_WINDOW = "socket.connection.setup.timeout.max.ms"


class Cluster:
    """Connections to the brokers of one cluster and its metadata; the base of every client operation."""

    def __init__(self, config: ClientConfig | Mapping[str, Any]) -> None:
        self.config = config if isinstance(config, ClientConfig) else ClientConfig(config)
        if self.config.uses_sasl:
            check_login(self.config)  # a login this client cannot honour fails here, naming it, before any I/O
        self.metadata = ClusterMetadata()
        self._ssl = ssl_context(self.config) if self.config.uses_tls else None
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap: BrokerConnection | None = None
        self._failures: dict[str, float] = {}
        self._lock = threading.RLock()
        # Until some broker has completed a connection, failing to bootstrap means the cluster is unreachable
        # from here (wrong address, nothing listening, DNS, firewall): said after socket.connection.setup
        # .timeout.max.ms. Once reached, the same failures are a broker restart, ridden over for the retry window.
        self._reached = False
        self._unreached_since: float | None = None
        self._bootstrap_attempts = 0
        self._tried: dict[str, None] = {}
        self.retry_policy = RetryPolicy(
            self.config.retries, Backoff(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms),
            self.config.default_api_timeout_ms / 1000)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        servers = ",".join(f"{h}:{p}" for h, p in self.config.bootstrap_servers)
        if self.config.zookeeper is not None:
            servers = ",".join(filter(None, (servers, f"zookeeper {self.config.zookeeper.ensemble}")))
        return f"Cluster({servers}, {self.config.security_protocol}, {len(self._connections)} connections)"

    @property
    def in_flight(self) -> int:
        """Requests written on any of the cluster's connections and not yet answered."""
        with self._lock:
            conns = [*self._connections.values(), *([self._bootstrap] if self._bootstrap is not None else [])]
        return sum(c.in_flight for c in conns)

    def close(self) -> None:
        """Close every connection."""
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()
            if self._bootstrap is not None:
                self._bootstrap.close()
                self._bootstrap = None

    # ---- connections -----------------------------------------------------------------------

    def _open(self, host: str, port: int, node_id: int | None) -> BrokerConnection:
        conn = BrokerConnection(host, port, self.config, node_id=node_id, ssl_context=self._ssl)
        address = conn.address
        try:
            conn.connect()
        except KafkaConnectionError:
            self._failures[address] = time.monotonic()
            raise
        self._failures.pop(address, None)
        self._reached = True
        return conn

    def connection(self, node_id: int) -> BrokerConnection:
        """The open connection to broker `node_id` (opened on first use)."""
        with self._lock:
            conn = self._connections.get(node_id)
            if conn is not None and conn.connected:
                return conn
            broker = self.metadata.brokers.get(node_id)
            if broker is None:
                self.refresh_metadata(topics=())
                broker = self.metadata.brokers.get(node_id)
            if broker is None:
                raise KafkaConnectionError(f"broker {node_id} is not in the cluster metadata")
            if conn is not None:
                conn.close()
            conn = self._open(broker.host, broker.port, node_id)
            self._connections[node_id] = conn
            return conn

    def any_connection(self) -> BrokerConnection:
        """A connection to some live broker: an open one, else a known broker, else a bootstrap server."""
        with self._lock:
            live = [c for c in self._connections.values() if c.connected]
            if live:
                return min(live, key=lambda c: c.in_flight)
            if self._bootstrap is not None and self._bootstrap.connected:
                return self._bootstrap
            errors: list[str] = []
            brokers = list(self.metadata.brokers.values())
            random.shuffle(brokers)
            brokers.sort(key=lambda b: self._failures.get(b.address, 0.0))
            for broker in brokers:
                try:
                    return self.connection(broker.node_id)
                except AuthenticationError:
                    raise
                except KafkaConnectionError as exc:
                    errors.append(str(exc))
            return self._connect_bootstrap(errors)

    def _connect_bootstrap(self, errors: list[str]) -> BrokerConnection:
        if not self._reached:
            self._bootstrap_attempts += 1
            if self._unreached_since is None:
                self._unreached_since = time.monotonic()
        servers = list(self.config.bootstrap_servers)
        # skip servers that failed recently, but still try them last
        servers.sort(key=lambda hp: self._failures.get(f"{hp[0]}:{hp[1]}", 0.0))
        conn = self._first_reachable(servers, errors)
        if conn is None and self.config.zookeeper is not None:
            # Registrations change (a broker restarted on another port): ask ZooKeeper who is up now.
            from kafka_spark.zookeeper.brokers import discover_bootstrap

            zk = self.config.zookeeper
            found = discover_bootstrap(zk, self.config.security_protocol)
            if not found:
                errors.append(f"no broker is registered in ZooKeeper {zk.ensemble}")
            conn = self._first_reachable(found, errors)
        if conn is None:
            raise NoBrokersAvailableError("no broker is reachable: " + "; ".join(errors))
        self._bootstrap = conn
        return conn

    def _first_reachable(self, servers: list[tuple[str, int]], errors: list[str]) -> BrokerConnection | None:
        for host, port in servers:
            self._tried[f"{host}:{port}"] = None
            try:
                return self._open(host, port, None)
            except AuthenticationError:
                raise
            except KafkaConnectionError as exc:
                log.info("bootstrap server %s:%d is unavailable: %s", host, port, exc)
                errors.append(str(exc))
        return None

    # ---- metadata --------------------------------------------------------------------------

    def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Fetch metadata for `topics` (None: every topic; empty: brokers only) from any broker."""
        names = None if topics is None else sorted(set(topics))

        def attempt(_: int) -> ClusterMetadata:
            conn = self.any_connection()
            version = conn.version(ApiKey.METADATA)
            if names == [] and version == 0:
                # v0 cannot ask for no topics: an empty list means all of them
                request_topics: list[str] | None = None
            else:
                request_topics = names
            body = metadata_request(version, request_topics, self.config.allow_auto_create_topics)
            response = conn.request(ApiKey.METADATA, body, version)
            code = response.get("error_code", 0)
            if code:
                raise broker_error(code, "Metadata")
            with self._lock:
                self.metadata.update(response, names)
                self._forget_departed_brokers()
            return self.metadata

        return self._run("refresh metadata", attempt, self._drop_dead)

    def _forget_departed_brokers(self) -> None:
        for node_id in list(self._connections):
            if node_id not in self.metadata.brokers:
                self._connections.pop(node_id).close()

    def _drop_dead(self, _: BaseException) -> None:
        with self._lock:
            for node_id, conn in list(self._connections.items()):
                if not conn.connected:
                    del self._connections[node_id]

    def topics(self, names: Iterable[str], max_age_s: float | None = None) -> dict[str, TopicInfo]:
        """Metadata of `names`, refreshed when missing, stale or in error; `UnknownTopicError` if absent."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        max_age = self.config.metadata_max_age_ms / 1000 if max_age_s is None else max_age_s
        unknown_attempts = settling_attempts = 0

        def attempt(_: int) -> dict[str, TopicInfo]:
            nonlocal unknown_attempts
            now = time.monotonic()
            stale = [n for n in wanted if (info := self.metadata.topic(n)) is None or info.error_code
                     or now - info.updated > max_age or any(p.leader < 0 for p in info.partitions.values())]
            if stale:
                self.refresh_metadata(stale)
            out = {}
            for name in wanted:
                info = self.metadata.topic(name)
                code = info.error_code if info else UNKNOWN_TOPIC_OR_PARTITION
                if code == UNKNOWN_TOPIC_OR_PARTITION:
                    unknown_attempts += 1
                    if unknown_attempts >= _UNKNOWN_TOPIC_ATTEMPTS:
                        raise UnknownTopicError(f"topic {name!r} does not exist in the cluster")
                if info is None or code:
                    raise broker_error(code, f"metadata of topic {name!r}")
                out[name] = info
            return out

        def retriable(exc: BaseException) -> bool:
            nonlocal settling_attempts
            if isinstance(exc, BrokerError) and exc.code == INVALID_REPLICATION_FACTOR:
                settling_attempts += 1
                return settling_attempts < _SETTLING_ATTEMPTS
            return is_retriable(exc)

        return self._run("topic metadata", attempt, self._drop_dead, retriable)

    def partitions(self, topic: str) -> list[TopicPartition]:
        """The partitions of `topic`, in order."""
        return sorted(TopicPartition(topic, p) for p in self.topics([topic])[topic].partitions)

    def matching_topics(self, pattern: str, include_internal: bool = False) -> list[str]:
        """Names of existing topics in which `pattern` is found (a regex search, as Spark's subscribePattern)."""
        self.refresh_metadata(None)
        return self.metadata.matching(pattern, include_internal)

    def leader(self, tp: TopicPartition) -> PartitionInfo:
        """The partition with a live leader; a retriable error when none is elected (refresh and retry)."""
        info = self.topics([tp.topic])[tp.topic]
        part = info.partitions.get(tp.partition)
        if part is None:
            # the topic may have gained partitions since the cache was filled
            info = self.topics([tp.topic], max_age_s=0)[tp.topic]
            part = info.partitions.get(tp.partition)
            if part is None:
                raise UnknownTopicError(f"{tp} does not exist (topic has {len(info.partitions)} partitions)")
        if part.leader < 0:
            self.metadata.invalidate(tp.topic)
            raise LeaderNotAvailableError(context=str(tp))
        return part

    def leader_connection(self, tp: TopicPartition) -> tuple[BrokerConnection, PartitionInfo]:
        """The connection to the leader of `tp` and the partition's metadata."""
        part = self.leader(tp)
        try:
            return self.connection(part.leader), part
        except KafkaConnectionError:
            self.metadata.invalidate(tp.topic)
            raise

    # ---- retries ---------------------------------------------------------------------------

    def on_retriable(self, exc: BaseException) -> None:
        """Forget what a retriable error says is stale: metadata, and dead connections."""
        if isinstance(exc, (RetriableBrokerError, KafkaConnectionError)):
            self.metadata.invalidate()
        self._drop_dead(exc)

    def retry(self, what: str, operation: Callable[[int], T],
              retriable: Callable[[BaseException], bool] = is_retriable) -> T:
        """Run `operation` under the retry policy, refreshing metadata between attempts."""
        return self._run(what, operation, self.on_retriable, retriable)

    def _run(self, what: str, operation: Callable[[int], T], on_retry: Callable[[BaseException], None],
             retriable: Callable[[BaseException], bool] = is_retriable) -> T:
        """The retry policy's run, but a cluster never reached is given up after socket.connection.setup
        .timeout.max.ms with `BootstrapUnreachableError`, whichever limit ends the retries."""
        window_ms = int(self.config.get(BOOTSTRAP_WINDOW))

        def worth_retrying(exc: BaseException) -> bool:
            if self._never_reached(exc) and self._unreached_for() >= window_ms / 1000:
                return False
            return retriable(exc)

        try:
            return self.retry_policy.run(what, operation, on_retry=on_retry, retriable=worth_retrying)
        except BootstrapUnreachableError:
            raise
        except (RetriesExhaustedError, NoBrokersAvailableError) as exc:
            last = exc.last_error if isinstance(exc, RetriesExhaustedError) else exc
            if last is None or not self._never_reached(last):
                raise
            raise BootstrapUnreachableError(what, self._bootstrap_attempts, self._unreached_for(), last,
                                            list(self._tried), window_ms) from last

    def _never_reached(self, exc: BaseException) -> bool:
        return isinstance(exc, NoBrokersAvailableError) and not self._reached

    def _unreached_for(self) -> float:
        return 0.0 if self._unreached_since is None else time.monotonic() - self._unreached_since

    def group_by_leader(self, tps: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        """Partitions grouped by their current leader's node id."""
        by_leader: dict[int, list[TopicPartition]] = {}
        tps = list(tps)
        infos = self.topics({tp.topic for tp in tps})
        for tp in tps:
            # One metadata check for all: leader() per partition re-checks the whole topic each time.
            part = infos[tp.topic].partitions.get(tp.partition)
            if part is None or part.leader < 0:
                part = self.leader(tp)
            by_leader.setdefault(part.leader, []).append(tp)
        return by_leader


def raise_partition_error(code: int, tp: TopicPartition, what: str) -> None:
    """Raise the typed error for a partition-level error code (nothing for 0)."""
    if code:
        error = error_for_code(code, f"{what} {tp}")
        assert isinstance(error, BrokerError)
        raise error
