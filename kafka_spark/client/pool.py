"""Clusters kept open between the tasks one process runs, so a task does not reconnect to read.

Spark runs many short tasks in the same Python worker; opening a cluster (TCP, TLS, SASL, ApiVersions,
metadata) cost each of them more than reading a small range. A cluster goes back to the pool only
when its user finished cleanly with no request in flight; after an error or an abandoned read it is
closed. Idle clusters older than `connections.max.idle.ms` are closed rather than reused, before the
broker drops their connections. A forked child never reuses its parent's sockets.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from kafka_spark.client.cluster import Cluster

# One idle cluster per worker slot is what a worker needs; a few more cover tasks run side by side.
MAX_IDLE_PER_CONFIG = 4

_Key = tuple[tuple[str, str], ...]


def _key(config: Mapping[str, Any]) -> _Key:
    return tuple(sorted((str(k), str(v)) for k, v in config.items()))


class ClusterPool:
    """Idle `Cluster`s by client configuration; `lease` hands one out and takes it back."""

    def __init__(self) -> None:
        self._idle: dict[_Key, list[tuple[float, Cluster]]] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @contextmanager
    def lease(self, config: Mapping[str, Any]) -> Iterator[Cluster]:
        """A cluster for `config`: a pooled one if a fresh one is idle, else a new one."""
        key = _key(config)
        cluster = self._take(key) or Cluster(config)
        clean = False
        try:
            yield cluster
            clean = True
        finally:
            if clean and cluster.in_flight == 0:
                self._give(key, cluster)
            else:
                cluster.close()

    def idle(self) -> int:
        """How many clusters wait in the pool (for this process)."""
        with self._lock:
            self._after_fork()
            return sum(len(v) for v in self._idle.values())

    def close(self) -> None:
        """Close every idle cluster."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for entries in idle.values():
            for _, cluster in entries:
                cluster.close()

    def _take(self, key: _Key) -> Cluster | None:
        stale: list[Cluster] = []
        try:
            with self._lock:
                self._after_fork()
                entries = self._idle.get(key, [])
                now = time.monotonic()
                while entries:
                    since, cluster = entries.pop()
                    if now - since < cluster.config.connections_max_idle_ms / 1000:
                        return cluster
                    stale.append(cluster)
                return None
        finally:
            for cluster in stale:
                cluster.close()

    def _give(self, key: _Key, cluster: Cluster) -> None:
        with self._lock:
            self._after_fork()
            entries = self._idle.setdefault(key, [])
            if len(entries) < MAX_IDLE_PER_CONFIG:
                entries.append((time.monotonic(), cluster))
                return
        cluster.close()

    def _after_fork(self) -> None:
        # The sockets belong to the parent: forget them without closing (closing would end its TLS).
        if os.getpid() != self._pid:
            self._idle, self._pid = {}, os.getpid()


_POOL = ClusterPool()
atexit.register(_POOL.close)


def pooled_cluster(config: Mapping[str, Any]) -> AbstractContextManager[Cluster]:
    """`ClusterPool.lease` on this process's pool."""
    return _POOL.lease(config)


def process_pool() -> ClusterPool:
    """This process's pool (for tests and for closing it early)."""
    return _POOL
