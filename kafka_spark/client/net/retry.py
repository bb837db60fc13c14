"""Retry with exponential backoff and jitter, bounded by attempts and a deadline."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from kafka_spark.client.errors import RetriesExhaustedError
from kafka_spark.errors import BrokerError, KafkaConnectionError

T = TypeVar("T")
log = logging.getLogger(__name__)


def is_retriable(exc: BaseException) -> bool:
    """Network failures and the broker errors the Java client retries."""
    if isinstance(exc, KafkaConnectionError):
        return True
    return isinstance(exc, BrokerError) and exc.retriable


class Backoff:
    """Delays growing from `base_ms` to `max_ms` (doubling, ±20 % jitter so clients do not stampede)."""

    def __init__(self, base_ms: int, max_ms: int) -> None:
        self.base_ms = max(base_ms, 0)
        self.max_ms = max(max_ms, self.base_ms)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if self.base_ms == 0:
            return 0.0
        raw = min(self.base_ms * (2 ** min(attempt - 1, 30)), self.max_ms)
        return raw * random.uniform(0.8, 1.2) / 1000.0


_cap = threading.local()


@contextmanager
def retries_end_within(seconds: float) -> Iterator[None]:
    """Make every retry loop run by this thread give up `seconds` from now (nested caps keep the earliest).

    For callers with their own deadline, such as a producer's delivery.timeout.ms, that is shorter than
    the default.api.timeout.ms the loops are configured with.
    """
    previous = getattr(_cap, "at", None)
    at = time.monotonic() + max(seconds, 0.0)
    _cap.at = at if previous is None else min(previous, at)
    try:
        yield
    finally:
        _cap.at = previous


class RetryPolicy:
    """Run an operation until it succeeds, a non-retriable error occurs, or retries/time run out."""

    def __init__(self, retries: int, backoff: Backoff, timeout_s: float) -> None:
        self.retries = retries
        self.backoff = backoff
        self.timeout_s = timeout_s

    def run(self, what: str, operation: Callable[[int], T],
            on_retry: Callable[[BaseException], None] | None = None,
            retriable: Callable[[BaseException], bool] = is_retriable) -> T:
        """Call ``operation(attempt)``; on a retriable error call `on_retry` (e.g. refresh metadata), wait, repeat."""
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                return operation(attempt)
            except Exception as exc:
                if not retriable(exc):
                    raise
                elapsed = time.monotonic() - started
                delay = self.backoff.delay(attempt)
                cap = getattr(_cap, "at", None)
                if attempt > self.retries or elapsed + delay > self.timeout_s or (
                        cap is not None and time.monotonic() + delay > cap):
                    raise RetriesExhaustedError(what, attempt, elapsed, exc) from exc
                log.info("%s: retrying after %s (attempt %d, waiting %.2fs)", what, exc, attempt, delay)
                if on_retry is not None:
                    on_retry(exc)
                time.sleep(delay)
