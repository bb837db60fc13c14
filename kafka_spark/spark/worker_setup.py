"""What the first `pykafka` task in a Python worker sets up for the worker's later tasks.

PySpark's daemon runs a full `gc.collect()` in a reused worker after every task. A worker holds ~46,000
objects once pyspark, pyarrow, numpy and this package are loaded, and each such collection walked all of them:
17–48 ms of CPU a task, spent while the next task of the same job runs on the other core (four tasks of a
100 MB write: a tenth of the workers' CPU). Those objects are the modules' own and live as long as the worker,
so the first task moves them to the collector's permanent generation (`gc.freeze`), after one collection that
frees whatever was already garbage. What the first task itself loads (the client, the protocol's schemas, the
encoders: ~21,000 objects, 5 ms of each later collection) lives as long, so the second task freezes again what
survived the collection PySpark ran in between; the collections after later tasks then walk only what those
tasks made. A
worker that runs one task only (`spark.python.worker.reuse=false`: no `SPARK_REUSE_WORKER` in its environment,
which PySpark's daemon reads too) is left alone: it never collects, and the freeze would cost it a collection.
"""

from __future__ import annotations

import gc
import os

from kafka_spark.spark.worker_memory import retain_freed_memory


def prepare_worker() -> bool:
    """In a Spark task's Python worker: keep freed memory (`worker_memory`) and, in a reused worker, freeze the
    objects loaded so far (once a worker); False elsewhere (a driver, a test process), which is left as it is."""
    from pyspark import TaskContext

    if TaskContext.get() is None:
        return False
    if os.environ.get("SPARK_REUSE_WORKER"):
        freeze_loaded_objects()
    return retain_freed_memory()


_FREEZES = 2  # the worker's loaded modules, then what its first task loaded
_freezes: list[int] = []


def freeze_loaded_objects() -> int:
    """Move every object the collector tracks out of its reach, in the first two calls of a process (the first
    after a collection of its own, the second right after PySpark's that follows the first task); later calls
    change nothing. How many objects the last freeze left frozen."""
    if len(_freezes) < _FREEZES:
        if not _freezes:
            gc.collect()
        gc.freeze()
        # counted once a freeze: the count walks every frozen object (1-3 ms at each task start, measured)
        _freezes.append(gc.get_freeze_count())
    return _freezes[-1]
