"""The stand-in for a stream's source process (kafka_spark/local/runner_client.py) starts the process itself when
the runner zygote forks nothing: no zygote listening, or one that refuses the request."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

from kafka_spark.local import runner_client
from kafka_spark.local.runner_client import ZYGOTE_ENV

CLIENT = Path(runner_client.__file__)


def run_client(path: Path) -> subprocess.CompletedProcess[str]:
    # /bin/echo stands for the session's launcher: what the client runs when the zygote cannot serve
    return subprocess.run([sys.executable, "-S", "-E", str(CLIENT), str(path), "/bin/echo", "-m", "runner", "x"],
                          capture_output=True, text=True, timeout=30, env={ZYGOTE_ENV: str(path)}, check=False)


def test_without_a_zygote_the_launcher_runs(tmp_path):
    done = run_client(tmp_path / "absent.sock")
    assert (done.returncode, done.stdout.strip()) == (0, "-m runner x")


def test_a_zygote_that_refuses_the_request_leaves_it_to_the_launcher(tmp_path):
    path = tmp_path / "z.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def refuse() -> None:
        conn, _ = server.accept()
        conn.recv(1 << 16)
        conn.close()  # no pid: nothing was forked

    thread = threading.Thread(target=refuse)
    thread.start()
    try:
        done = run_client(path)
    finally:
        thread.join(10)
        server.close()
    assert (done.returncode, done.stdout.strip()) == (0, "-m runner x")
