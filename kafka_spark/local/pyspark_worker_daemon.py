"""PySpark's Python worker daemon, with each task's input acknowledged at once over TCP.

Spark's JVM sends a task's input to its Python worker in several small writes over loopback TCP, with
Nagle's algorithm on: each write waits until the previous one is acknowledged, and Linux delays the
worker's acknowledgement by up to 40 ms. That wait was 34 ms of each 44 ms task of a Python data source.
Setting TCP_QUICKACK on the worker's socket as each task starts makes the kernel acknowledge at once.
Spark's own cure, Unix domain sockets (`spark.python.unix.domain.socket.enabled`), made a cancelled job
crash a running task of another query in the same session.

The daemon also sets `MIMALLOC_PURGE_DELAY=-1` for the workers it forks (unless it is set): Arrow's
allocator then keeps the pages a task frees instead of handing them back after 10 ms, and the next batch
reuses them rather than faulting in fresh zeroed memory (see `kafka_spark.spark.worker_memory`). The workers
load pyarrow, which reads the variable once, after the fork.

Local sessions name this module in `spark.python.daemon.module`; everything else is PySpark's daemon.
"""

from __future__ import annotations

import os
import socket
from collections.abc import MutableMapping
from typing import Any

import pyspark.daemon as _daemon

_spark_worker = _daemon.worker


def quick_ack(sock: socket.socket) -> bool:
    """Put a TCP socket in quick-ACK mode; False for other sockets or where the option does not exist."""
    option = getattr(socket, "TCP_QUICKACK", None)  # Linux only
    if option is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, option, 1)
    except OSError:
        return False
    return True


def worker(sock: socket.socket, *args: Any, **kwargs: Any) -> Any:
    """PySpark's forked worker (its other arguments vary by PySpark version), run once per task on a reused
    worker; the kernel leaves quick-ACK mode as soon as the worker answers, so it is set again each task."""
    quick_ack(sock)
    return _spark_worker(sock, *args, **kwargs)


def keep_arrow_memory(environ: MutableMapping[str, str]) -> None:
    """Arrow's mimalloc in the forked workers never purges freed pages; a value already set is kept."""
    environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")


_daemon.worker = worker  # manager() looks the name up when it forks a worker

if __name__ == "__main__":
    keep_arrow_memory(os.environ)
    _daemon.manager()
