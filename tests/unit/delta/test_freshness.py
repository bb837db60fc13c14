"""Freshness (sink/freshness.py): timestamp sketches per file, merged on the driver into p50/p99/max."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from kafka_spark.sink.freshness import POINTS, TimestampSketch, files_freshness, freshness_of
from kafka_spark.sink.parquet.files import FileSpec, write_files


def test_small_sketches_are_exact():
    sketch = TimestampSketch()
    sketch.add(np.array([1_000, 3_000, 2_000, -1]))  # -1: a record without a timestamp
    fresh = freshness_of(sketch, 5_000)
    assert fresh is not None and sketch.count == 3
    assert (fresh.p50_ms, fresh.max_ms) == (3_000, 4_000)


def test_merged_sketches_approximate_the_percentiles_of_all_records():
    rng = np.random.default_rng(7)
    values = rng.integers(0, 1_000_000, size=50_000)
    merged = TimestampSketch()
    for part in np.array_split(values, 37):  # files of uneven sizes
        one = TimestampSketch()
        one.add(part)
        assert one.points.size <= POINTS
        merged.merge(TimestampSketch.from_json(one.to_json()))
    assert merged.count == values.size
    assert merged.quantile(0.0) == values.min() and merged.quantile(1.0) == values.max()  # exact
    for q in (0.01, 0.5, 0.99):
        assert abs(merged.quantile(q) - np.quantile(values, q)) < 0.02 * 1_000_000


def test_no_timestamps_no_freshness():
    assert freshness_of(TimestampSketch(), 1) is None
    assert files_freshness([{"timestamps": None}, {}], 10) is None


def test_arrow_columns_of_any_unit():
    sketch = TimestampSketch()
    sketch.add_column(pa.array([1_500_000, None], pa.timestamp("us", tz="UTC")))
    sketch.add_column(pa.array([2], pa.timestamp("s")))
    assert sketch.points.tolist() == [1_500, 2_000]


def test_direct_writer_file_rows_carry_their_records_timestamps(tmp_path):
    schema = ('{"type":"struct","fields":[{"name":"value","type":"binary","nullable":true,"metadata":{}},'
              '{"name":"timestamp","type":"timestamp","nullable":true,"metadata":{}}]}')
    spec = FileSpec(str(tmp_path), schema, stats_columns=())
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    times = [base + dt.timedelta(milliseconds=i) for i in range(1000)]
    batch = pa.RecordBatch.from_pydict({"value": pa.array([b"x"] * 1000),
                                        "timestamp": pa.array(times, pa.timestamp("us", tz="UTC"))})
    rows = [r for out in write_files([batch], spec) for r in out.to_pylist()]
    assert len(rows) == 1 and rows[0]["timestamps"]
    start = int(base.timestamp() * 1000)
    fresh = files_freshness(rows, start + 2_000)
    assert fresh is not None
    assert fresh.max_ms == 2_000 and fresh.p50_ms == pytest.approx(1_500, abs=15)
    assert fresh.p99_ms == pytest.approx(1_990, abs=15)
