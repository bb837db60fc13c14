"""How fresh a commit's rows are: commit time minus the records' Kafka timestamps (p50, p99, max, in ms).

The direct writer's tasks already hold every record's timestamp while they write a file, so each file row
carries a small sketch of them (`TimestampSketch`: at most `POINTS` sorted timestamps, each standing for an
equal share of the file's records) and the driver merges the sketches of a batch's files. That costs one
small JSON string per file instead of a second Spark job over the batch. Merged sketches are approximate
(a percentile is off by at most about 1/POINTS of a file's records in rank); the minimum and maximum,
hence the maximum freshness, are exact.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

# 101 points hold the 0th, 1st, ..., 100th percentile: enough for p99 and a JSON string of ~1.5 KB a file.
POINTS = 101


@dataclass
class TimestampSketch:
    """Sorted timestamps (epoch ms), `weights[i]` records each; `count` records in all."""

    points: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    weights: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float64))

    @property
    def count(self) -> int:
        return round(float(self.weights.sum()))

    def add(self, millis: np.ndarray) -> None:
        """Take these records' timestamps (negative ones, a record without a timestamp, are left out)."""
        values = np.asarray(millis, dtype=np.int64)
        values = values[values >= 0]
        if values.size:
            self._merge(values, np.ones(values.size))  # _merge orders them

    def add_column(self, column: pa.Array | pa.ChunkedArray) -> None:
        """Take an Arrow timestamp column (any unit; nulls are left out)."""
        if not pa.types.is_timestamp(column.type):
            return
        per_ms = {"s": 1e-3, "ms": 1, "us": 1000, "ns": 1_000_000}[column.type.unit]
        values = column.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
        self.add(values * 1000 if per_ms == 1e-3 else values // int(per_ms))

    def merge(self, other: TimestampSketch) -> None:
        if other.points.size:
            self._merge(other.points, other.weights)

    def _merge(self, points: np.ndarray, weights: np.ndarray) -> None:
        merged = np.concatenate([self.points, points])
        order = np.argsort(merged, kind="stable")
        self.points = merged[order]
        self.weights = np.concatenate([self.weights, weights])[order]
        if self.points.size > POINTS:
            self._compress()

    def _compress(self) -> None:
        # POINTS equally spaced ranks of the weighted distribution, the first and last being min and max.
        total = float(self.weights.sum())
        self.points = self._quantiles(np.linspace(0.0, 1.0, POINTS))
        self.weights = np.full(POINTS, total / POINTS)

    def quantile(self, q: float) -> int:
        """The timestamp below which a share `q` of the records lie (q=0: the minimum)."""
        if not self.points.size:
            raise ValueError("an empty sketch has no quantiles")
        return int(self._quantiles(np.array([q]))[0])

    def _quantiles(self, shares: np.ndarray) -> np.ndarray:
        # One running sum for all the ranks: this runs in the write tasks, once per row group.
        cumulative = np.cumsum(self.weights)
        at = np.searchsorted(cumulative, shares * cumulative[-1], side="left")
        return self.points[np.minimum(at, self.points.size - 1)].astype(np.int64)

    def to_json(self) -> str:
        # Points of one weight (every sketch a file row carries, once compressed or never merged) keep one number.
        same = self.weights.size and bool(np.all(self.weights == self.weights[0]))
        weights: Any = float(self.weights[0]) if same else self.weights.tolist()
        return json.dumps({"p": self.points.tolist(), "w": weights}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> TimestampSketch:
        data = json.loads(text)
        points = np.asarray(data["p"], dtype=np.int64)
        weights = data["w"]
        if isinstance(weights, (int, float)):
            return cls(points, np.full(points.size, float(weights)))
        return cls(points, np.asarray(weights, dtype=np.float64))


@dataclass(frozen=True)
class Freshness:
    """Commit time minus the committed records' timestamps, in ms: the median, the 99th percentile (the
    oldest 1% of records are at least this old) and the maximum (the oldest record)."""

    p50_ms: int
    p99_ms: int
    max_ms: int
    committed_at_ms: int

    def summary(self) -> dict[str, int]:
        return {"p50": self.p50_ms, "p99": self.p99_ms, "max": self.max_ms}


def freshness_of(sketch: TimestampSketch, committed_at_ms: int) -> Freshness | None:
    """The freshness of the sketch's records at `committed_at_ms`; None when they have no timestamps."""
    if not sketch.points.size:
        return None
    # The older a record, the fresher-than percentile it falls in: p99 freshness is the 1st timestamp percentile.
    return Freshness(committed_at_ms - sketch.quantile(0.5), committed_at_ms - sketch.quantile(0.01),
                     committed_at_ms - int(sketch.points[0]), committed_at_ms)


def files_freshness(rows: list[dict[str, Any]], committed_at_ms: int | None = None) -> Freshness | None:
    """The freshness of the records of a direct write's file rows (their `timestamps` sketches), at
    `committed_at_ms` (default: now)."""
    sketch = TimestampSketch()
    for row in rows:
        text = row.get("timestamps")
        if text:
            sketch.merge(TimestampSketch.from_json(text))
    return freshness_of(sketch, int(time.time() * 1000) if committed_at_ms is None else committed_at_ms)


class ObservedFreshness:
    """The freshness of rows that Spark's writer commits, observed in the write's own job (`df.observe`): the
    minimum and the 1st and 50th percentiles of their Kafka timestamps, with no second pass over the rows."""

    def __init__(self, df: Any) -> None:
        self.observation: Any = None
        self.df = df
        field = next((f for f in df.schema.fields if f.name == "timestamp"), None)
        if field is None or field.dataType.typeName() != "timestamp":
            return  # a transform dropped or replaced the column: nothing to tell
        import uuid

        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        self.observation = Observation(f"kafka-spark-freshness-{uuid.uuid4().hex[:12]}")
        millis = F.unix_millis(F.col("timestamp"))
        self.df = df.observe(self.observation, F.min(millis).alias("min"),
                             F.percentile_approx(millis, F.array(F.lit(0.01), F.lit(0.5)), F.lit(1000)).alias("q"))

    def freshness(self, committed_at_ms: int | None = None) -> Freshness | None:
        """After the write: the rows' freshness at `committed_at_ms` (default: now); None without timestamps."""
        if self.observation is None:
            return None
        try:
            seen = self.observation.get
        except Exception:  # progress only: the commit stands
            return None
        low, quantiles = seen.get("min"), seen.get("q")
        if low is None or not quantiles or None in quantiles:
            return None
        at = int(time.time() * 1000) if committed_at_ms is None else committed_at_ms
        return Freshness(at - int(quantiles[1]), at - int(quantiles[0]), at - int(low), at)


def arrow_freshness(rows: pa.Table, committed_at_ms: int | None = None) -> Freshness | None:
    """The freshness of a batch's rows held in Arrow (their `timestamp` column) at `committed_at_ms` (default:
    now); None without the column or timestamps."""
    if "timestamp" not in rows.column_names:
        return None
    sketch = TimestampSketch()
    sketch.add_column(rows.column("timestamp"))
    return freshness_of(sketch, int(time.time() * 1000) if committed_at_ms is None else committed_at_ms)
