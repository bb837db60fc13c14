"""Coordinators: the broker that owns a consumer group or a transactional id, found with FindCoordinator,
cached, and looked up again when it moves."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import BrokerInfo
from kafka_spark.client.net.connection import BrokerConnection
from kafka_spark.client.net.retry import is_retriable
from kafka_spark.errors import KafkaConnectionError
from kafka_spark.errors.codes import BrokerError, broker_error
from kafka_spark.protocol import ApiKey

T = TypeVar("T")

GROUP = 0
TRANSACTION = 1
_KINDS = {GROUP: "group", TRANSACTION: "transactional id"}
# errors that mean "ask FindCoordinator again"
COORDINATOR_MOVED = frozenset({14, 15, 16})  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR


class Coordinators:
    """The coordinators of one kind of key (`GROUP` or `TRANSACTION`) on a cluster."""

    def __init__(self, cluster: Cluster, key_type: int = GROUP) -> None:
        self.cluster = cluster
        self.key_type = key_type
        self._nodes: dict[str, int] = {}

    def connection(self, key: str) -> BrokerConnection:
        """The connection to the coordinator of `key` (found with FindCoordinator and cached)."""
        node = self._nodes.get(key)
        if node is None:
            node = self._find(key)
        try:
            return self.cluster.connection(node)
        except KafkaConnectionError:
            self._nodes.pop(key, None)
            raise

    def locate(self, keys: list[str]) -> None:
        """Find the coordinators of `keys` not known yet: one FindCoordinator for all of them where the broker
        takes several keys (v4+), one each otherwise. A key the broker cannot place is left to `connection`."""
        missing = [k for k in dict.fromkeys(keys) if k not in self._nodes]
        if not missing:
            return
        conn = self.cluster.any_connection()
        if conn.version(ApiKey.FIND_COORDINATOR) < 4:
            for key in missing:
                self._find(key)
            return
        body = {"key": "", "key_type": self.key_type, "coordinator_keys": missing}
        for answer in conn.request(ApiKey.FIND_COORDINATOR, body)["coordinators"]:
            if not answer["error_code"]:
                self._learn(answer["key"], answer)

    def _find(self, key: str) -> int:
        conn = self.cluster.any_connection()
        version = conn.version(ApiKey.FIND_COORDINATOR)
        body: dict[str, Any] = {"key": key, "key_type": self.key_type, "coordinator_keys": [key]}
        response = conn.request(ApiKey.FIND_COORDINATOR, body, version)
        answer = response["coordinators"][0] if version >= 4 else response
        if answer["error_code"]:
            raise broker_error(answer["error_code"], f"FindCoordinator for {_KINDS[self.key_type]} {key!r}",
                               answer.get("error_message"))
        return self._learn(key, answer)

    def _learn(self, key: str, answer: Mapping[str, Any]) -> int:
        node = answer["node_id"]
        if node not in self.cluster.metadata.brokers:
            self.cluster.metadata.brokers[node] = BrokerInfo(node, answer["host"], answer["port"])
        self._nodes[key] = node
        return node

    def forget(self, key: str) -> None:
        """Drop the cached coordinator of `key` (after NOT_COORDINATOR and the like)."""
        self._nodes.pop(key, None)

    def request(self, key: str, api_key: int, make_body: Callable[[int], Mapping[str, Any]],
                max_version: int | None = None) -> tuple[dict[str, Any], int]:
        """One request to the coordinator of `key`; `make_body(version)` builds the body for the negotiated
        version (at most `max_version`)."""
        conn = self.connection(key)
        version = conn.version(api_key)
        if max_version is not None:
            version = min(version, max_version)
        try:
            return conn.request(api_key, make_body(version), version), version
        except KafkaConnectionError:
            self.forget(key)
            raise

    def retry(self, key: str, what: str, attempt: Callable[[int], T]) -> T:
        """Run `attempt` with retries; coordinator moves make it look the coordinator up again."""

        def retriable(exc: BaseException) -> bool:
            if isinstance(exc, BrokerError) and exc.code in COORDINATOR_MOVED:
                self.forget(key)
                return True
            return is_retriable(exc)

        return self.cluster.retry(f"{what} for {_KINDS[self.key_type]} {key!r}", attempt, retriable=retriable)
