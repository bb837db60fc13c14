"""A cluster no bootstrap broker of which ever takes a connection is reported soon, as unreachable; a cluster
that was reached and goes down is retried for the whole retry window, so a broker restart is ridden over."""

from __future__ import annotations

import contextlib
import pickle
import socket
import subprocess
import sys
import threading
import time

import pytest
from client_fake_broker import FakeBroker

from kafka_spark.client import KafkaClient
from kafka_spark.client.errors import BootstrapUnreachableError, NoBrokersAvailableError, RetriesExhaustedError

FAST = {"retry.backoff.ms": 20, "retry.backoff.max.ms": 100, "request.timeout.ms": 5000}


def closed_port() -> int:
    """A port nothing listens on: connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RestartableBroker(FakeBroker):
    """A scripted broker that can go down (its port closed, its connections reset) and come back on its port."""

    def __init__(self) -> None:
        self.accepted: list[socket.socket] = []
        super().__init__(lambda *a: None)

    def _serve(self, conn: socket.socket) -> None:
        self.accepted.append(conn)
        super()._serve(conn)

    def stop(self) -> None:
        # A listening socket closed while a thread waits in accept() still takes connections on Linux: shut it down.
        for sock in (self._server, *self.accepted):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.close()
        self.accepted.clear()

    def start(self) -> None:
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()


def test_a_closed_port_fails_fast_naming_the_address_and_the_refusal():
    port = closed_port()
    config = {"bootstrap.servers": f"127.0.0.1:{port}", "socket.connection.setup.timeout.max.ms": 1500, **FAST}
    started = time.monotonic()
    with KafkaClient(config) as client, pytest.raises(BootstrapUnreachableError) as info:
        client.metadata([])
    took = time.monotonic() - started
    error = info.value
    assert took < 4, took  # the window, a backoff and one more round; default.api.timeout.ms (60 s) plays no part
    assert error.servers == (f"127.0.0.1:{port}",)
    assert isinstance(error, RetriesExhaustedError) and isinstance(error.last_error, NoBrokersAvailableError)
    text = str(error)
    assert f"never connected to any bootstrap broker: tried 127.0.0.1:{port}" in text
    assert "Connection refused" in text and "socket.connection.setup.timeout.max.ms=1500" in text
    assert "kept answering with a retriable error" not in text
    assert str(pickle.loads(pickle.dumps(error))) == text  # crosses Spark's process boundaries intact


def test_a_shorter_api_timeout_still_says_the_cluster_was_never_reached():
    # default.api.timeout.ms ends the retries before the bootstrap window: the error still says why.
    ports = [closed_port(), closed_port()]
    config = {"bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in ports), "default.api.timeout.ms": 600, **FAST}
    started = time.monotonic()
    with KafkaClient(config) as client, pytest.raises(BootstrapUnreachableError) as info:
        client.partitions("t")
    assert time.monotonic() - started < 3
    assert set(info.value.servers) == {f"127.0.0.1:{p}" for p in ports}
    assert all(f"127.0.0.1:{p}" in str(info.value) for p in ports)


def test_a_cluster_reached_before_is_retried_for_the_whole_window_and_rides_over_a_restart():
    window = {"socket.connection.setup.timeout.max.ms": 500, "default.api.timeout.ms": 15000, **FAST}
    with RestartableBroker() as broker, KafkaClient({"bootstrap.servers": broker.bootstrap, **window}) as client:
        assert client.partitions("t")
        broker.stop()
        # Down for longer than a never-reached cluster is tried: this one was reached, so it is waited for.
        threading.Timer(2.0, broker.start).start()
        started = time.monotonic()
        assert client.metadata(None).cluster_id == "fake"
        assert 1.5 < time.monotonic() - started < 10


def test_a_cluster_reached_before_that_stays_down_ends_at_the_retry_window_as_before():
    window = {"socket.connection.setup.timeout.max.ms": 300, "default.api.timeout.ms": 2000, **FAST}
    with RestartableBroker() as broker, KafkaClient({"bootstrap.servers": broker.bootstrap, **window}) as client:
        client.metadata([])
        broker.stop()
        started = time.monotonic()
        with pytest.raises(RetriesExhaustedError) as info:
            client.metadata([])
        assert not isinstance(info.value, BootstrapUnreachableError)
        assert 1.5 < time.monotonic() - started < 5


def test_the_cli_against_a_closed_port_exits_soon_naming_the_address_and_the_refusal():
    port = closed_port()
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kafka_spark", "metadata", "-b", f"127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=45)
    took = time.monotonic() - started
    assert done.returncode == 1, done  # a cluster error; settings errors exit 2
    assert took < 20, took  # the command's 10 s bootstrap window (and the interpreter's start), not 60 s
    assert f"never connected to any bootstrap broker: tried 127.0.0.1:{port}" in done.stderr
    assert "Connection refused" in done.stderr and "kept answering" not in done.stderr
