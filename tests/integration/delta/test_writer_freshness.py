"""Each writer reports its commit's freshness (commit time minus the records' Kafka timestamps): Spark's Delta
writer observes it in the write's own job, the direct writer merges its files' sketches. Records stamped 20 s
and 300 s before the load give a median of ~20 s and a maximum of ~300 s, whichever wrote them."""

from __future__ import annotations

import time

import pytest

from kafka_spark.delta import load
from kafka_spark.sink import LoadOptions


@pytest.mark.parametrize("writer", ["spark", "direct"])
def test_a_loads_freshness_is_its_records_age_at_the_commit(kafka, spark, producer, topic_name, tmp_path, writer):
    kafka.create_topic(topic_name, partitions=2)
    now = int(time.time() * 1000)
    for i in range(200):
        # one record in a hundred is old: the 99th percentile and the maximum see it, the median does not
        stamp = now - (300_000 if i % 100 == 0 else 20_000)
        producer.send(topic_name, f"v{i}".encode(), key=str(i).encode(), timestamp_ms=stamp)
    producer.flush()
    result = load(spark, LoadOptions(table=str(tmp_path / "t"), kafka={"bootstrap.servers": kafka.bootstrap},
                                     topics=[topic_name], writer=writer))
    took = int(time.time() * 1000) - now
    assert (result.status, result.rows, result.writer) == ("committed", 200, writer)
    fresh = result.freshness
    assert fresh is not None
    assert 20_000 <= fresh.p50_ms <= 20_000 + took
    assert 300_000 <= fresh.max_ms <= 300_000 + took
    assert fresh.p50_ms <= fresh.p99_ms <= fresh.max_ms
    assert result.summary()["freshness_ms"] == fresh.summary()
