"""Hostile input: a fake broker lies to the range reader; the read ends exact or with a typed error, quickly,
and memory stays within the configured fetch sizes (peak RSS sampled during the read)."""

from __future__ import annotations

import threading
import time

import pytest
from hostile_broker import END, MODES, TOPIC, HostileBroker

from kafka_spark.client import KafkaClient
from kafka_spark.errors import KafkaSparkError

FETCH_MAX = 1 << 20
CONFIG = {"request.timeout.ms": 1000, "default.api.timeout.ms": 3000, "socket.connection.setup.timeout.ms": 1000,
          "fetch.max.bytes": FETCH_MAX, "max.partition.fetch.bytes": 256 << 10, "fetch.max.wait.ms": 100,
          "retry.backoff.ms": 50, "retry.backoff.max.ms": 200}
# The whole read, retries included, ends within the API timeout plus one request timeout and slack.
DEADLINE_S = 3 + 1 + 4
# Growth allowed over the read: the configured fetch bytes twice (two in flight), plus Arrow and slack.
RSS_BOUND = 2 * FETCH_MAX + (24 << 20)


class RssSampler:
    """The peak growth of this process's resident memory while the block runs (sampled every 5 ms)."""

    def __init__(self) -> None:
        self.base = self._rss()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._rss())

    @property
    def growth(self) -> int:
        return self.peak - self.base

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


# What each lie must end in: "exact" rows, or the typed error (class name) that explains it.
EXPECTED = {
    "honest": "exact",
    "lying_length": "RetriesExhaustedError",  # request timeouts, retried until the API timeout
    "frame_2gib": "RetriesExhaustedError",  # rejected by its size before any allocation
    "frame_64mib_lie": "RetriesExhaustedError",
    "negative_count": "DecodeError",
    "huge_count": "DecodeError",
    "truncated_batch": "FetchTimeoutError",  # no complete batch ever arrives
    "batch_claims_2gib": "FetchTimeoutError",
    "offsets_backwards": "CorruptRecordError",
    "offsets_backwards_in_batch": "CorruptRecordError",
    "wrong_correlation": "RetriesExhaustedError",
    "garbage_after_frame": "exact",  # each response is whole; the garbage costs a reconnect
    "drip": "RetriesExhaustedError",  # request.timeout.ms bounds the whole response, not each byte
}
assert set(EXPECTED) == set(MODES)


@pytest.mark.parametrize("mode", MODES)
def test_hostile_fetch_ends_typed_and_bounded(mode: str) -> None:
    with HostileBroker(mode) as broker, KafkaClient({"bootstrap.servers": broker.bootstrap, **CONFIG}) as client:
        client.metadata([TOPIC])  # warm up (imports, metadata) outside the measured window
        started = time.monotonic()
        with RssSampler() as rss:
            try:
                table = client.fetch(TOPIC, 0, 0, END).read_all()
                outcome = "exact" if table is not None and table.column("offset").to_pylist() == list(
                    range(END)) else f"wrong rows {None if table is None else table.column('offset').to_pylist()}"
                error = None
            except KafkaSparkError as exc:
                outcome, error = type(exc).__name__, exc
        took = time.monotonic() - started
    print(f"{mode}: {outcome} in {took:.1f}s, RSS +{rss.growth / 2**20:.1f} MiB: {error}")
    expected = EXPECTED[mode]
    if expected == "exact":
        assert outcome == "exact"
    else:
        assert error is not None, f"{mode}: {outcome}"
        names = {type(e).__name__ for e in (error, getattr(error, "last_error", None)) if e is not None}
        names |= {c.__name__ for c in type(error).__mro__}
        assert expected in names, f"{mode}: got {type(error).__name__}: {error}"
        assert str(error)
    assert took < DEADLINE_S, f"{mode} took {took:.1f}s"
    assert rss.growth < RSS_BOUND, f"{mode}: RSS grew by {rss.growth / 2**20:.1f} MiB"
