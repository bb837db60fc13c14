"""The worker daemon of local sessions: PySpark's own, with quick ACKs on each task's TCP socket."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pyspark.daemon
import pytest

from kafka_spark.local import pyspark_worker_daemon
from kafka_spark.local.worker_python import DAEMON_MODULE, worker_daemon

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="TCP_QUICKACK is Linux's")


@pytest.fixture
def tcp_pair():
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        yield accepted, client
        accepted.close()
        client.close()


def test_quick_ack_puts_a_tcp_socket_in_quick_ack_mode(tcp_pair) -> None:
    sock, _ = tcp_pair
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)  # delayed ACKs, as after a reply
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 0
    assert pyspark_worker_daemon.quick_ack(sock) is True
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1


def test_unix_sockets_are_left_alone() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert pyspark_worker_daemon.quick_ack(left) is False


def test_a_closed_socket_is_no_error(tcp_pair) -> None:
    sock, _ = tcp_pair
    sock.close()
    assert pyspark_worker_daemon.quick_ack(sock) is False


def test_each_task_sets_quick_ack_then_runs_pysparks_worker(tcp_pair, monkeypatch: pytest.MonkeyPatch) -> None:
    sock, _ = tcp_pair
    seen = []

    def spark_worker(s: socket.socket, authenticated: bool) -> int:
        seen.append((s, authenticated, s.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK)))
        return 7

    monkeypatch.setattr(pyspark_worker_daemon, "_spark_worker", spark_worker)
    for authenticated in (False, True):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
        assert pyspark_worker_daemon.worker(sock, authenticated) == 7
    assert seen == [(sock, False, 1), (sock, True, 1)]


def test_pysparks_daemon_forks_our_worker() -> None:
    # manager() calls the module-level name when it forks
    assert pyspark.daemon.worker is pyspark_worker_daemon.worker


def test_the_daemon_is_used_where_the_interpreter_finds_it(tmp_path: Path) -> None:
    worker_daemon.cache_clear()
    assert worker_daemon(sys.executable) == DAEMON_MODULE
    lost = tmp_path / "python"
    lost.write_text("#!/bin/sh\nexec " + sys.executable + " -I -S \"$@\"\n")  # no site-packages: no kafka_spark
    lost.chmod(0o755)
    assert worker_daemon(str(lost)) is None
    assert worker_daemon(str(tmp_path / "missing")) is None


def test_forked_workers_keep_arrows_freed_pages_unless_told_otherwise() -> None:
    environ: dict[str, str] = {}
    pyspark_worker_daemon.keep_arrow_memory(environ)
    assert environ == {"MIMALLOC_PURGE_DELAY": "-1"}
    chosen = {"MIMALLOC_PURGE_DELAY": "100"}
    pyspark_worker_daemon.keep_arrow_memory(chosen)
    assert chosen == {"MIMALLOC_PURGE_DELAY": "100"}
