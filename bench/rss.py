"""Peak resident memory of the Python worker processes under a JVM, and CPU time by process, measured from /proc.

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


def cpu_seconds(pid: int, reaped: bool = False) -> float:
    """User + system CPU seconds of `pid` (with `reaped`, also of its children it has waited for); 0 once gone."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


class CpuSplit:
    """Context manager: CPU seconds spent while the block runs by the broker (`broker_pid`), the Spark JVM and
    its Python workers (with the workers they reaped). A process that exits before the end is counted up to
    the last look at it (taken at the start and at the end)."""

    def __init__(self, broker_pid: int | None, jvm_pid: int | None) -> None:
        self.broker_pid, self.jvm_pid = broker_pid, jvm_pid
        self.seconds: dict[str, float] = {}
        self._start: dict[int, float] = {}

    def _now(self) -> dict[int, float]:
        now = {}
        if self.broker_pid is not None:
            now[self.broker_pid] = cpu_seconds(self.broker_pid)
        if self.jvm_pid is not None:
            now[self.jvm_pid] = cpu_seconds(self.jvm_pid)
            for pid in python_descendants(self.jvm_pid):
                now[pid] = cpu_seconds(pid, reaped=True)
        return now

    def __enter__(self) -> CpuSplit:
        self._start = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        end = self._now()
        start = self._start
        spent = {pid: end.get(pid, start.get(pid, 0.0)) - start.get(pid, 0.0) for pid in {*end, *start}}
        self.seconds = {
            "broker": round(spent.get(self.broker_pid, 0.0), 2) if self.broker_pid is not None else 0.0,
            "spark jvm": round(spent.get(self.jvm_pid, 0.0), 2) if self.jvm_pid is not None else 0.0,
            "python workers": round(sum(v for p, v in spent.items() if p not in (self.broker_pid, self.jvm_pid)), 2),
        }
