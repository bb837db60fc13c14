"""A warm process that forks a local session's stream source processes, so a stream starts 0.3 s sooner.

Spark starts a fresh Python process for every streaming query of a Python data source (PySpark's
`python_streaming_source_runner`), and that process spends 0.3-0.5 s importing PySpark, NumPy and PyArrow
before it answers the query's first call: an AvailableNow stream pays it before its one micro-batch. A local
session (local/spark.py) starts this zygote once per driver process, with those modules and the data source
already imported; the session's Python launcher (worker_python.py) hands each runner start to it through
runner_client.py, and the zygote forks a child that takes the client's standard streams, environment and
working directory and runs the runner module as `__main__`. The client waits for the child and exits with its
status, so Spark sees a process that behaves as the one it started.

The zygote listens on a Unix socket in the launcher's private folder (mode 0700, this user's only), serves one
module, and ends with the process that started it (it checks its parent every half second). Linux only;
`KAFKA_SPARK_RUNNER_ZYGOTE=off` in the environment turns it off.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

from kafka_spark.local.runner_client import ZYGOTE_ENV

RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"
_MAX_REQUEST = 1 << 20  # the client's arguments and environment


def start_zygote(folder: Path, python: str) -> str | None:
    """Start the zygote for this process (once) and return its socket path; None where it does not serve (not
    Linux, turned off, or the socket path too long)."""
    current = os.environ.get(ZYGOTE_ENV)
    if current == "off" or not sys.platform.startswith("linux"):
        return None
    path = str(folder / f"runner-{os.getpid()}.sock")
    if current == path:
        return path
    if len(path.encode()) > 100:  # sun_path holds 108 bytes
        return None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    # Its own session: a Ctrl-C in the driver's terminal is the driver's to handle, not the zygote's.
    subprocess.Popen([python, "-m", __name__, path, str(os.getpid())], stdin=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)
    os.environ[ZYGOTE_ENV] = path
    return path


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, _MAX_REQUEST + 4, 3)
    while len(data) >= 4 and len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        more = conn.recv(_MAX_REQUEST)
        if not more:
            break
        data += more
    size = struct.unpack(">i", data[:4])[0] if len(data) >= 4 else -1
    if len(fds) != 3 or not 0 <= size <= _MAX_REQUEST or len(data) != 4 + size:
        for fd in fds:
            os.close(fd)
        raise ValueError("a malformed request")
    return json.loads(data[4:]), fds


def _child(closing: list[socket.socket | int], request: dict, fds: list[int]) -> None:
    """In the forked child: become the process Spark started, run the runner, never return."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for item in closing:
            item.close() if isinstance(item, socket.socket) else os.close(item)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request["env"].items()})
        os.chdir(request["cwd"])
        sys.argv = [RUNNER, *[str(a) for a in request["argv"][2:]]]
        import runpy

        # run as __main__ from its code: the zygote's import of it (for its dependencies) would be reused, with
        # runpy's warning
        sys.modules.pop(RUNNER, None)
        runpy.run_module(RUNNER, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve(path: str, parent: int) -> None:
    """Fork a runner for each client until the parent process ends."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no BLAS threads in a process that forks
    import importlib

    importlib.import_module(RUNNER)
    importlib.import_module("kafka_spark.spark.datasource")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(16)
    # A runner's end wakes the loop at once (its client exits with it, and Spark may be waiting on that).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    waiting: dict[int, socket.socket] = {}  # a runner's pid -> its client
    try:
        while os.getppid() == parent:
            readable, _, _ = select.select([listener.fileno(), wake_r], [], [], 0.5)
            if wake_r in readable:
                os.read(wake_r, 4096)
            _reap(waiting)
            if listener.fileno() not in readable:
                continue
            conn, _ = listener.accept()
            try:
                request, fds = _read_request(conn)
            except (OSError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            try:
                pid = os.fork()
            except OSError:  # no process to be had now: the client starts the runner itself
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            if pid == 0:
                _child([listener, conn, wake_r, wake_w, *waiting.values()], request, fds)
            for fd in fds:
                os.close(fd)
            try:
                conn.sendall(struct.pack(">i", pid))
                waiting[pid] = conn
            except OSError:
                conn.close()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _reap(waiting: dict[int, socket.socket]) -> None:
    """Tell each client whose runner ended its exit status; a client that left drops its entry."""
    for pid, conn in list(waiting.items()):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if not done:
            continue
        waiting.pop(pid)
        with contextlib.suppress(OSError):
            conn.sendall(struct.pack(">i", os.waitstatus_to_exitcode(status) & 0xFF))
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
