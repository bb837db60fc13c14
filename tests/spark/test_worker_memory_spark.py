"""In a local session's Python task: glibc keeps freed memory, and Arrow's allocator was told to."""

from __future__ import annotations

import platform

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


def _seen_by_the_task(rows):
    import os

    from kafka_spark.spark.worker_memory import keep_freed_memory

    for _ in rows:
        yield keep_freed_memory(), os.environ.get("MIMALLOC_PURGE_DELAY")


def test_a_task_keeps_freed_memory_and_the_driver_is_left_alone(spark) -> None:
    from kafka_spark.spark.worker_memory import keep_freed_memory

    assert spark.sparkContext.parallelize([0], 1).mapPartitions(_seen_by_the_task).collect() == [(True, "-1")]
    assert keep_freed_memory() is False
