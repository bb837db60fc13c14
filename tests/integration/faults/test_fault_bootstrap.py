"""The real broker behind a proxy that goes down and comes back on its port: a client that reached the cluster
rides over the outage for the whole retry window, even when it lasts longer than a client that never reached
the cluster is given (socket.connection.setup.timeout.max.ms); that client is told so, soon."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from harness.faults import FaultProxy

from kafka_spark.client import KafkaClient
from kafka_spark.client.errors import BootstrapUnreachableError
from kafka_spark.client.metadata import TopicPartition

WINDOW_MS = 1000
CONFIG = {"socket.connection.setup.timeout.max.ms": WINDOW_MS, "default.api.timeout.ms": 30000,
          "retry.backoff.ms": 50, "retry.backoff.max.ms": 500}


class PinnedProxy(FaultProxy):
    """A fault-free proxy listening on `port` when given, so that a stopped one comes back where clients knew it."""

    def __init__(self, upstream: tuple[str, int], port: int | None = None) -> None:
        super().__init__(upstream)
        if port is not None:
            self._listener.close()
            self._listener = socket.create_server(("127.0.0.1", port))
            self._listener.settimeout(0.2)
            self.port = port
            self.addresses[upstream] = ("127.0.0.1", port)


def test_an_outage_longer_than_the_bootstrap_window_is_ridden_over_by_a_client_that_reached_the_cluster(
        kafka, topic_name: str) -> None:
    kafka.create_topic(topic_name, partitions=1)
    host, _, port = kafka.bootstrap.rpartition(":")
    upstream = (host, int(port))
    proxy = PinnedProxy(upstream).start()
    replacement: list[PinnedProxy] = []
    down_s = 3 * WINDOW_MS / 1000
    comeback = threading.Timer(down_s, lambda: replacement.append(PinnedProxy(upstream, proxy.port).start()))
    try:
        with KafkaClient({"bootstrap.servers": proxy.address, **CONFIG}) as client:
            tp = TopicPartition(topic_name, 0)
            assert client.latest_offsets([tp]) == {tp: 0}
            proxy.stop()  # its connections reset, its port refuses
            comeback.start()
            started = time.monotonic()
            with KafkaClient({"bootstrap.servers": proxy.address, **CONFIG}) as newcomer, \
                    pytest.raises(BootstrapUnreachableError, match="Connection refused"):
                newcomer.metadata([])  # a client that never reached it is told so within the window
            assert time.monotonic() - started < down_s
            assert client.latest_offsets([tp]) == {tp: 0}
            assert time.monotonic() - started >= down_s - 0.5
    finally:
        comeback.cancel()
        if comeback.is_alive():
            comeback.join()
        for p in [proxy, *replacement]:
            p.stop()
