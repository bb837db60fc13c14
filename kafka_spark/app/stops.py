"""Stop requests: SIGTERM, SIGHUP and the first Ctrl-C ask a stream to stop after the micro-batch in flight;
a second Ctrl-C (or any stop request to a batch load) stops at once.

Stopping at once kills the JVM with SIGKILL rather than cancelling its work: a cancelled Spark job
prints its tasks' stack traces, a killed one prints nothing, and the commit protocol makes a kill safe
(what was not committed is loaded by the next run).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# Set by the spark-submit supervisor (submit.py): the file this driver writes its pid to, so that the
# supervisor's signals reach the driver and not the JVM.
PID_FILE_ENV = "KAFKA_SPARK_DRIVER_PID_FILE"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequest:
    """Catches the stop signals; `event` is set by the first, `at_once` is called on a second Ctrl-C (or on
    the first signal when `graceful` is false)."""

    def __init__(self, prog: str, graceful: bool = True) -> None:
        self.prog = prog
        self.graceful = graceful
        self.event = threading.Event()
        self.signum: int | None = None
        self.at_once: Callable[[int], None] = self._stop_now
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        # Signal handlers belong to the main thread; run elsewhere, the caller's handling stands.
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._request) for signum in SIGNALS}
            publish_pid()
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _request(self, signum: int, frame: Any) -> None:
        if not self.graceful or (self.event.is_set() and signum == signal.SIGINT):
            self.at_once(signum)
            return
        self.signum = signum
        self.event.set()

    def _stop_now(self, signum: int) -> None:
        what = "the micro-batch in flight is" if self.graceful else "this run's batch is"
        print(f"{self.prog}: stopped at once; {what} not committed (the next run loads it)",
              file=sys.stderr, flush=True)
        stop_now(128 + signum)


def publish_pid() -> None:
    """Tell the supervisor, if there is one, which process to signal."""
    path = os.environ.get(PID_FILE_ENV)
    if path:
        try:
            with open(path, "w") as fh:
                fh.write(f"{os.getpid()}\n")
        except OSError:
            pass  # no supervisor to tell: signals still reach this process from a terminal


def stop_now(status: int) -> None:
    """End this driver and its JVM at once, with `status`."""
    sys.stdout.flush()
    if os.environ.get(PID_FILE_ENV) and os.getpgrp() == os.getsid(0):
        # The supervisor made a session for the JVM and this driver: everything in it goes, workers too.
        # The JVM copies this driver's output to the terminal: give it a moment to pass the last line on.
        time.sleep(0.3)
        os.killpg(os.getpgrp(), signal.SIGKILL)
    try:
        from kafka_spark.local.session import gateway_process

        jvm = gateway_process()
    except ImportError:
        jvm = None
    if jvm is not None:
        jvm.kill()
    os._exit(status)
