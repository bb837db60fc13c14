"""Run spark-submit so that stop signals reach the Python driver only:

    python -m kafka_spark.app.submit SPARK-SUBMIT [ARGS...]

spark-submit's JVM runs the driver as its child. A terminal's Ctrl-C goes to the whole foreground process
group, and the JVM's own children (Hadoop's shell commands) die of it in the middle of a checkpoint
write; a supervisor's SIGTERM reaches the JVM, whose shutdown ends the query mid-batch. So the JVM and
everything under it run in a session of their own, and this process passes SIGINT, SIGTERM and SIGHUP to
the driver (which stops after the micro-batch in flight), or to the JVM while no driver has started yet.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from kafka_spark.app.stops import PID_FILE_ENV, SIGNALS

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook that kills the child when this process dies, as `exec` used to (Linux only)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _driver_pid(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def run(command: Sequence[str]) -> int:
    """Run `command` in a session of its own, passing stop signals to its driver; its exit status."""
    fd, pid_file = tempfile.mkstemp(prefix="kafka-spark-driver-", suffix=".pid")
    os.close(fd)
    forwarded: list[int] = []

    def forward(signum: int, frame: Any) -> None:
        forwarded.append(signum)
        driver = _driver_pid(pid_file)
        # A hang-up asks for the same stop as SIGTERM: the driver treats both alike.
        with contextlib.suppress(ProcessLookupError):
            if driver is not None:
                os.kill(driver, signum)
            else:
                os.killpg(child.pid, signal.SIGTERM)

    try:
        child = subprocess.Popen(list(command), env={**os.environ, PID_FILE_ENV: pid_file},
                                 start_new_session=True, preexec_fn=_die_with_parent())
        for signum in SIGNALS:
            signal.signal(signum, forward)
        while True:
            try:
                code = child.wait()
                break
            except InterruptedError:
                continue
    finally:
        with contextlib.suppress(OSError):
            os.unlink(pid_file)
    if code < 0 and forwarded:
        # Killed because a stop was asked for at once: report the signal that asked, as a shell would.
        return 128 + forwarded[-1]
    return code if code >= 0 else 128 - code


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m kafka_spark.app.submit SPARK-SUBMIT [ARGS...]", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
