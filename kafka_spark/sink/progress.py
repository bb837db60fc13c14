"""A one-line progress display of the Spark job a load runs, from Spark's status tracker."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """Prints `tasks done/total, elapsed` about once a second while the load's Spark job runs."""

    def __init__(self, spark, label: str, out: TextIO | None = None, interval: float = 1.0) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._label = label
        self._out = out or sys.stderr
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafka-spark-progress", daemon=True)
        self._started = time.monotonic()
        self._tty = hasattr(self._out, "isatty") and self._out.isatty()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        if self._tty:
            self._out.write("\n")
            self._out.flush()

    def _counts(self) -> tuple[int, int]:
        done = total = 0
        for stage_id in self._tracker.getActiveStageIds():
            info = self._tracker.getStageInfo(stage_id)
            if info:
                done += info.numCompletedTasks
                total += info.numTasks
        return done, total

    def _run(self) -> None:
        last = (0, 0)
        while not self._stop.wait(self._interval):
            counts = self._counts()
            # A terminal line is redrawn every tick (the clock moves); a log gets a line per change only.
            if counts[1] and (self._tty or counts != last):
                line = f"[{self._label}] tasks {counts[0]}/{counts[1]}, {time.monotonic() - self._started:.1f}s"
                self._out.write(("\r" + line) if self._tty else (line + "\n"))
                self._out.flush()
                last = counts
