"""How an application ends: settings and data errors as one line and an exit status, never a traceback."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from kafka_spark.errors import ConfigError, KafkaSparkError

# Exit statuses: 0 done (also a stream stopped on request), 1 a data or cluster error, 2 a settings error,
# 130 interrupted at once (a second Ctrl-C).
EXIT_FAILED = 1
EXIT_SETTINGS = 2
EXIT_INTERRUPTED = 130

_RAISED = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Exit)): (.+)$")


def error_line(exc: BaseException) -> str:
    """One line that says what went wrong, also for errors raised on an executor and carried by Spark."""
    if isinstance(exc, KafkaSparkError):
        return str(exc)
    from kafka_spark.spark.failures import java_text

    lines = [line for line in java_text(exc).splitlines() if line.strip()]
    # A Python worker's failure arrives as its whole traceback; its last `Name: message` line is the cause.
    raised = [m for m in map(_RAISED.match, lines) if m]
    ours = [m for m in raised if "kafka_spark" in m.group(0)]
    if ours or raised:
        m = (ours or raised)[-1]
        return f"{m.group(1)}: {m.group(2).strip()}"
    return lines[0].strip() if lines else type(exc).__name__


def expected_errors() -> tuple[type[BaseException], ...]:
    """Errors that are the data's or the settings' fault: reported in one line, with no traceback."""
    from kafka_spark.spark.failures import spark_error_types

    return (KafkaSparkError, *spark_error_types())


def run_reported(prog: str, run: Callable[[], int]) -> int:
    """Run an application; settings and data errors become one line and exit 2 (settings) or 1."""
    try:
        return run()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except expected_errors() as exc:
        print(f"{prog}: error: {' '.join(error_line(exc).split())}", file=sys.stderr, flush=True)
        return EXIT_SETTINGS if isinstance(exc, ConfigError) else EXIT_FAILED


def run_program(prog: str, argv: Sequence[str] | None, parse: Callable[[Sequence[str] | None], Any],
                run: Callable[[Any, bool, str], int]) -> int:
    """An application as a program: `parse` turns argv into (settings, flags), `run` runs them; one exit status."""
    def program() -> int:
        config, args = parse(argv)
        return run(config, args.json, prog)

    return run_reported(prog, program)
