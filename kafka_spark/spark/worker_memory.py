"""A Python worker that keeps the memory it frees, for its next batches.

A task streams gigabytes through buffers of a few megabytes (Spark's Arrow batches, record batches, request
frames). By default glibc hands large freed blocks back to the kernel (its heap top beyond twice the largest
block freed, blocks over its adaptive mmap threshold at once), so the next buffer is fresh memory whose first
touch faults and is zeroed: in the `pykafka` sink at 1 KB records, half of the 45,000 page faults a gigabyte
(the other half is Arrow's mimalloc, which local sessions' worker daemon configures: `pyspark_worker_daemon`). Both
together cost 0.3 CPU-seconds a gigabyte, a sixth of the worker's time. After `retain_freed_memory()` (called
by `worker_setup.prepare_worker` in a Spark task) glibc keeps up to 1 GiB of freed memory and serves blocks under
32 MiB from its heaps: the worker's resident size stays at its peak instead.
"""

from __future__ import annotations

import ctypes
import functools

# mallopt(3) parameters, from glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
# glibc's largest mmap threshold on 64-bit (larger values are refused)
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 1 << 30
TOP_PAD = 16 << 20


@functools.cache
def retain_freed_memory() -> bool:
    """Make glibc's malloc in this process keep freed memory for reuse (once; later calls return the first
    answer). False where the C library is not glibc, which is then left as it is."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; setting the mmap threshold also turns off glibc's own adjusting of it
    return all(mallopt(p, v) == 1 for p, v in ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                                (_M_TRIM_THRESHOLD, TRIM_THRESHOLD), (_M_TOP_PAD, TOP_PAD)))
