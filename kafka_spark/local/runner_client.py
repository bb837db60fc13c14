"""The stand-in Spark starts for a stream's source process in a local session: it has the runner zygote fork one.

Run by the session's Python launcher (worker_python.py) as `python -S -E runner_client.py SOCKET LAUNCHER -m
pyspark.sql.streaming.python_streaming_source_runner`, with the standard library only (no site, no imports of
PySpark: that is the point). It hands the zygote (runner_zygote.py) its arguments, environment, working directory
and standard streams, waits for the forked runner to end, passes signals on to it and exits with its status. When
the zygote cannot be reached it runs the launcher itself, without the zygote, so a stream never depends on it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
from typing import NoReturn

ZYGOTE_ENV = "KAFKA_SPARK_RUNNER_ZYGOTE"
CONNECT_TIMEOUT_S = 2.0


def _without_zygote(launcher: str, args: list[str]) -> NoReturn:
    os.environ.pop(ZYGOTE_ENV, None)  # else the launcher would hand the process back here
    os.execv(launcher, [launcher, *args])


def _receive(conn: socket.socket) -> int | None:
    data = b""
    while len(data) < 4:
        chunk = conn.recv(4 - len(data))
        if not chunk:
            return None
        data += chunk
    return int(struct.unpack(">i", data)[0])


def main(argv: list[str]) -> int:
    path, launcher, args = argv[0], argv[1], argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        conn.connect(path)
        conn.settimeout(None)
        request = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
        socket.send_fds(conn, [struct.pack(">i", len(request)) + request], [0, 1, 2])
    except OSError:
        conn.close()
        _without_zygote(launcher, args)
    pid = _receive(conn)
    if pid is None:  # the zygote forked nothing (it refused the request, or ended): start the runner here
        conn.close()
        _without_zygote(launcher, args)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    status = _receive(conn)  # a signal handled meanwhile does not end the wait (PEP 475)
    return 1 if status is None else status & 0xFF


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
