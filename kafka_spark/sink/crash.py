"""Named points of the commit protocol where the crash-safety tests kill the process."""

from __future__ import annotations

import os
import signal

# Test hook: kill the process at a named point of the commit protocol, to prove crash safety.
CRASH_ENV = "KAFKA_SPARK_CRASH_AT"


def crash_point(name: str) -> None:
    """Kill this process here when KAFKA_SPARK_CRASH_AT names the point (the crash-safety tests)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
