"""In a local session's Python task: glibc keeps freed memory, Arrow's allocator was told to, and the loaded objects
are frozen."""

from __future__ import annotations

import platform

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


def _seen_by_the_task(rows):
    import gc
    import os

    from kafka_spark.spark.worker_setup import prepare_worker

    for _ in rows:
        yield prepare_worker(), os.environ.get("MIMALLOC_PURGE_DELAY"), gc.get_freeze_count() > 10000


def test_a_task_keeps_freed_memory_and_the_driver_is_left_alone(spark) -> None:
    import gc

    from kafka_spark.spark.worker_setup import prepare_worker

    frozen = gc.get_freeze_count()
    assert spark.sparkContext.parallelize([0], 1).mapPartitions(_seen_by_the_task).collect() == [(True, "-1", True)]
    assert prepare_worker() is False
    assert gc.get_freeze_count() == frozen
