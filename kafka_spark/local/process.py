"""A supervised server process: started in its own process group, logged to a file, always stopped."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from kafka_spark.errors import KafkaSparkError
from kafka_spark.local.class_archive import sharing_options

_LIVE: weakref.WeakSet[ServerProcess] = weakref.WeakSet()

# Set to 1: every JVM this package starts (servers, tools, Spark drivers) compiles with C1 only. A short run
# (the test suite, a demo) spends a third less CPU; a long load wants C2's peak speed, so it is off by default.
QUICK_START_ENV = "KAFKA_SPARK_JVM_QUICK_START"
QUICK_JIT = ("-XX:TieredStopAtLevel=1",)


def quick_start() -> bool:
    """Whether JVMs started here trade peak speed for less start-up CPU (`KAFKA_SPARK_JVM_QUICK_START`)."""
    return os.environ.get(QUICK_START_ENV, "").strip().lower() in ("1", "true", "yes")


class ServerStartError(KafkaSparkError):
    """A local server exited or did not become ready in time."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n: int) -> list[int]:
    """`n` distinct free ports (held open together so none repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def log_tail(path: Path, lines: int = 40) -> str:
    """The last `lines` lines of a log file, or a note that it is missing."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return f"(no log at {path})"


class ServerProcess:
    """One child process in its own session; `stop()` terminates the whole group."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=self._env,
            )
        _LIVE.add(self)
        _stop_all_on_sigterm()
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, probe: Callable[[], bool], timeout: float = 90.0) -> None:
        """Poll `probe` until it returns True; fail with the log tail if the process dies or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ServerStartError(
                    f"{self.name} exited with code {self.proc.returncode if self.proc else '?'} before it was ready."
                    f" Log tail ({self.log_path}):\n{log_tail(self.log_path)}"
                )
            try:
                if probe():
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop(grace=2)
        raise ServerStartError(
            f"{self.name} was not ready after {timeout:.0f}s. Log tail ({self.log_path}):\n{log_tail(self.log_path)}"
        )

    def detach(self) -> None:
        """Let the process outlive this Python process (for `kafka-spark local start`)."""
        _LIVE.discard(self)

    def signal(self, sig: int) -> None:
        """Send `sig` to the process group (e.g. SIGKILL to simulate a crash)."""
        if self.alive() and self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the group, wait up to `grace` seconds, then SIGKILL it; idempotent."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(timeout=10)
        # Children of the group (none expected for `java`) must not outlive it either.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        _LIVE.discard(self)


@atexit.register
def _stop_all() -> None:
    for p in list(_LIVE):
        p.stop(grace=5)


def _stop_all_on_sigterm() -> None:
    # atexit does not run when the interpreter dies of SIGTERM (a CI timeout, a killed test run),
    # so turn SIGTERM into a normal exit while servers are alive.
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum: int, frame: object) -> None:
        _stop_all()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)


def java_argv(classpath: str, main: str, args: Sequence[str], heap: str = "512m", props: Sequence[str] = (),
              short_lived: bool = False) -> list[str]:
    """A `java` command line; `short_lived` trades peak speed for a faster start (CLI tools)."""
    tuning = [*QUICK_JIT, "-XX:+UseSerialGC"] if short_lived else [
        *(QUICK_JIT if quick_start() else ()), "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
        "-XX:+ExplicitGCInvokesConcurrent"]
    # pre-parsed classes (class_archive.py); a JVM that finds no archive writes one as it exits
    sharing = sharing_options(classpath, main)
    return ["java", f"-Xmx{heap}", *tuning, *sharing, "-Djava.awt.headless=true", *props, "-cp", classpath, main,
            *args]
