"""The first two tasks in a Python worker freeze the objects loaded so far: later collections skip them."""

from __future__ import annotations

import subprocess
import sys

from kafka_spark.spark.worker_setup import prepare_worker

# Garbage cycles made before the first freeze are collected by it; the loaded modules' objects are frozen, then
# (after the collection PySpark runs between tasks) what the first task loaded, so a full collection afterwards
# walks only what is made later, and a cycle made later is still collected.
FREEZE = """
import gc, weakref
import numpy, pyarrow, pyarrow.compute
import kafka_spark.client.producer.producer
from kafka_spark.spark.worker_setup import freeze_loaded_objects

class Node:
    pass

def cycle():
    node = Node()
    node.me = node
    return weakref.ref(node)

gc.disable()  # only the collections below run
before = cycle()
tracked = len(gc.get_objects())
frozen = freeze_loaded_objects()
kept = [Node() for _ in range(5000)]  # what the first task loaded and keeps
loaded = len(gc.get_objects())
gc.collect()  # PySpark's daemon, after the task
assert freeze_loaded_objects() > frozen + 0.9 * loaded
again = gc.get_freeze_count()
assert freeze_loaded_objects() == again  # twice a process
after = cycle()
left = len(gc.get_objects())
gc.collect()
print(tracked, frozen, loaded, left, before() is None, after() is None)
"""


def test_the_loaded_objects_are_frozen_twice_and_later_garbage_still_collected() -> None:
    out = subprocess.run([sys.executable, "-c", FREEZE], capture_output=True, text=True, check=True, timeout=60)
    tracked, frozen, loaded, left, before_gone, after_gone = out.stdout.split()
    assert int(tracked) > 10000  # pyarrow, numpy and the package's objects
    assert int(loaded) > 1000
    assert int(frozen) > 0.9 * int(tracked)
    assert int(left) < 100  # a collection now walks only these
    assert before_gone == "True" and after_gone == "True"


def test_a_process_outside_a_spark_task_is_left_alone() -> None:
    import gc

    frozen = gc.get_freeze_count()
    assert prepare_worker() is False
    assert gc.get_freeze_count() == frozen
