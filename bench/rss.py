"""Peak resident memory of the Python worker processes under a JVM, measured from /proc.

Spark's Python workers (`pyspark.daemon` and the workers it forks, plus the planning workers of
Python data sources) are descendants of the Spark JVM. Before a case, each live worker's peak RSS
counter is reset (`/proc/PID/clear_refs` with "5"); after it, `VmHWM` of every worker seen during
the case is the exact per-process peak. A sampler thread (every 50 ms) also records the largest
sum of the workers' current RSS, i.e. what the Python side held at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

PROC = Path("/proc")


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields after the last ')' are fixed
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def _is_python(pid: int) -> bool:
    try:
        return "python" in os.readlink(PROC / str(pid) / "exe").rsplit("/", 1)[-1]
    except OSError:
        return False


def python_descendants(root: int) -> list[int]:
    """Python processes below `root` (the JVM), at any depth."""
    children = _children_map()
    found, stack = [], list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        if _is_python(pid):
            found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def spark_jvm_pid() -> int | None:
    """The Spark JVM started by this process's SparkSession (a `java` child, possibly via a shell)."""
    children = _children_map()
    stack = list(children.get(os.getpid(), ()))
    while stack:
        pid = stack.pop()
        try:
            exe = os.readlink(PROC / str(pid) / "exe")
            cmdline = (PROC / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        if exe.endswith("/java") and b"org.apache.spark.deploy.SparkSubmit" in cmdline:
            return pid
        stack.extend(children.get(pid, ()))
    return None


class WorkerMemory:
    """Context manager: peak RSS of the Python workers under `jvm_pid` while the block runs."""

    def __init__(self, jvm_pid: int | None, interval: float = 0.05) -> None:
        self.jvm_pid = jvm_pid
        self.interval = interval
        self.seen: set[int] = set()
        self.peak_total_kb = 0
        self.peak_worker_kb = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> WorkerMemory:
        if self.jvm_pid is None:
            return self
        for pid in python_descendants(self.jvm_pid):
            with contextlib.suppress(OSError):
                (PROC / str(pid) / "clear_refs").write_text("5")
        self._sample()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        assert self.jvm_pid is not None
        total = 0
        for pid in python_descendants(self.jvm_pid):
            self.seen.add(pid)
            total += _status_kb(pid, "VmRSS")
            self.peak_worker_kb = max(self.peak_worker_kb, _status_kb(pid, "VmHWM"))
        self.peak_total_kb = max(self.peak_total_kb, total)

    @property
    def peak_worker_mb(self) -> float | None:
        return self.peak_worker_kb / 1024 if self.seen else None

    @property
    def peak_total_mb(self) -> float | None:
        return self.peak_total_kb / 1024 if self.seen else None
