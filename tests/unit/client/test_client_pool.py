"""The per-process cluster pool: tasks reuse a connection, never one with a request in flight or an error."""

from __future__ import annotations

import os

import pytest
from client_fake_broker import FakeBroker, fetch_response

from kafka_spark.client.fetch.fetcher import fetch_range
from kafka_spark.client.pool import ClusterPool
from kafka_spark.records import encode_batch


def _batch(base: int, n: int) -> bytes:
    return encode_batch([(None, b"v%d" % (base + i), (), 1_700_000_000_000) for i in range(n)], base_offset=base)


def _handler(api_key, version, body):
    offset = body["topics"][0]["partitions"][0]["fetch_offset"]
    return fetch_response(0, _batch(offset, 5), high_watermark=100)


def _config(broker: FakeBroker, **extra) -> dict[str, object]:
    return {"bootstrap.servers": broker.bootstrap, "retry.backoff.ms": 5, "request.timeout.ms": 5000, **extra}


def _read(pool: ClusterPool, config, start: int, end: int) -> list[int]:
    with pool.lease(config) as cluster:
        return [o for b in fetch_range(cluster, "t", 0, start, end) for o in b.column("offset").to_pylist()]


def test_consecutive_reads_share_one_connection():
    pool = ClusterPool()
    with FakeBroker(_handler) as broker:
        config = _config(broker)
        assert _read(pool, config, 0, 5) == list(range(5))
        assert _read(pool, config, 5, 15) == list(range(5, 15))
        assert _read(pool, config, 20, 22) == [20, 21]
        # bootstrap + the leader's connection, opened once for three reads
        assert broker.connections == 2
        assert pool.idle() == 1
        other = _config(broker, **{"client.id": "other"})
        assert _read(pool, other, 0, 1) == [0]
        assert pool.idle() == 2 and broker.connections == 4
    pool.close()
    assert pool.idle() == 0


def test_an_abandoned_read_or_an_error_closes_the_cluster():
    pool = ClusterPool()
    with FakeBroker(_handler) as broker:
        config = _config(broker)
        with pool.lease(config) as cluster:
            reader = iter(fetch_range(cluster, "t", 0, 0, 50))
            next(reader)  # the next fetch is already in flight
            assert cluster.in_flight > 0
            # a task whose consumer stops early: the generator is closed inside the lease
        assert pool.idle() == 0
        with pytest.raises(RuntimeError), pool.lease(config):
            raise RuntimeError("task failed")
        assert pool.idle() == 0


def test_abandoned_generator_of_a_lease_is_not_pooled():
    pool = ClusterPool()

    def task(config):
        with pool.lease(config) as cluster:
            yield from fetch_range(cluster, "t", 0, 0, 50)

    with FakeBroker(_handler) as broker:
        gen = task(_config(broker))
        next(gen)
        gen.close()  # what Python does to a task's iterator that Spark stops reading
        assert pool.idle() == 0


def test_idle_clusters_past_connections_max_idle_are_not_reused():
    pool = ClusterPool()
    with FakeBroker(_handler) as broker:
        config = _config(broker, **{"connections.max.idle.ms": 0})
        _read(pool, config, 0, 5)
        _read(pool, config, 5, 10)
        assert broker.connections == 4  # a new cluster each time: the idle one had expired


def test_a_forked_child_does_not_reuse_the_parents_sockets():
    pool = ClusterPool()
    with FakeBroker(_handler) as broker:
        config = _config(broker)
        _read(pool, config, 0, 5)
        assert pool.idle() == 1
        pid = os.fork()
        if pid == 0:  # the child reports through its exit code
            os._exit(0 if pool.idle() == 0 else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert pool.idle() == 1  # the parent's cluster is still there
    pool.close()
