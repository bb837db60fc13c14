"""The mutation loop: seeded, bounded per input in time (SIGALRM) and in memory (RLIMIT_AS), findings deduplicated.

A finding is any exception that is not a KafkaSparkError (a crash), an input that runs past the
per-input time bound (a hang), or a MemoryError. Each distinct finding (exception type and the
innermost kafka_spark frame) is saved once into `corpus/<target>/`.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import resource
import signal
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from targets import ALLOWED, Target, mutate

CORPUS = Path(__file__).resolve().parent / "corpus"


class InputTimeout(BaseException):
    """Raised by the alarm when one input runs past its time bound (BaseException: no `except Exception` eats it)."""


@dataclass
class Finding:
    """One distinct failure: its key, a short text and the input that showed it first."""

    key: str
    text: str
    data: bytes
    count: int = 1


@dataclass
class Report:
    """What a campaign on one target did."""

    target: str
    inputs: int = 0
    typed_errors: int = 0
    seconds: float = 0.0
    max_input_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    findings: dict[str, Finding] = field(default_factory=dict)
    saved: list[Path] = field(default_factory=list)

    def line(self) -> str:
        rate = self.inputs / self.seconds if self.seconds else 0.0
        return (f"{self.target}: {self.inputs} inputs in {self.seconds:.0f}s ({rate:.0f}/s), "
                f"{self.typed_errors} typed errors, slowest input {self.max_input_seconds * 1000:.0f} ms, "
                f"peak RSS {self.peak_rss_mb:.0f} MB, {len(self.findings)} distinct findings")


def _alarm(signum: int, frame: object) -> None:
    raise InputTimeout()


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raise InputTimeout in the main thread once `seconds` pass."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # an alarm someone else had set (pytest-timeout's) keeps running
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer - (time.monotonic() - started)))


def limit_memory(extra_bytes: int) -> None:
    """Cap this process's address space at its current size plus `extra_bytes`: a runaway allocation fails fast."""
    with open("/proc/self/statm") as f:
        current = int(f.read().split()[0]) * resource.getpagesize()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = current + extra_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def classify(exc: BaseException) -> str:
    """The deduplication key: the exception type and the innermost frame inside kafka_spark (or the last one)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "kafka_spark" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(exc).__name__}@{where}"


def run_one(target: Target, data: bytes, per_input_s: float) -> BaseException | None:
    """Run one input; the exception it raised (a typed error or a finding), else None."""
    try:
        with time_bound(per_input_s):
            target.run(data)
    except (InputTimeout, MemoryError, RecursionError, Exception) as exc:
        return exc
    return None


def fuzz(target: Target, *, max_inputs: int, max_seconds: float, seed: int = 0, per_input_s: float = 5.0,
         save: bool = False, corpus: Path = CORPUS) -> Report:
    """Mutate the target's seeds until `max_inputs` or `max_seconds`, whichever comes first."""
    rng = random.Random(seed)
    seeds = target.seeds(rng)
    report = Report(target.name)
    pool = list(seeds)  # inputs that raised nothing are kept to mutate further (a cheap corpus growth)
    started = time.monotonic()
    while report.inputs < max_inputs and time.monotonic() - started < max_seconds:
        parent = rng.choice(pool)
        data = mutate(parent, rng, seeds, target.keep) if report.inputs >= len(seeds) else seeds[report.inputs]
        if target.prepare is not None:
            data = target.prepare(data, rng)
        t0 = time.monotonic()
        exc = run_one(target, data, per_input_s)
        took = time.monotonic() - t0
        report.max_input_seconds = max(report.max_input_seconds, took)
        report.inputs += 1
        if exc is None:
            if rng.random() < 0.01 and len(pool) < 2000 and len(data) < 1 << 16:
                pool.append(data)
            continue
        if isinstance(exc, ALLOWED):
            report.typed_errors += 1
            continue
        key = classify(exc)
        if key in report.findings:
            report.findings[key].count += 1
            continue
        text = "".join(traceback.format_exception(exc)[-3:]).strip()
        report.findings[key] = Finding(key, text, data)
        if save:
            report.saved.append(save_input(corpus, target.name, data))
    report.seconds = time.monotonic() - started
    report.peak_rss_mb = peak_rss_mb()
    return report


def save_input(corpus: Path, target: str, data: bytes) -> Path:
    """Write `data` as `corpus/<target>/<sha1>.bin` (content-addressed, so re-finding it changes nothing)."""
    folder = corpus / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha1(data).hexdigest()[:16]}.bin"
    path.write_bytes(data)
    return path
