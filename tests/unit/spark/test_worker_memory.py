"""Python workers keep the memory they free: glibc's malloc tuned once per worker, in Spark tasks only."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

# A task's request frames: four 6 MiB buffers in flight, all freed on delivery, twenty times over.
CYCLES = """
import resource, sys
from kafka_spark.spark.worker_memory import retain_freed_memory
if sys.argv[1] == "retain":
    assert retain_freed_memory() and retain_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    held = [bytearray(6 << 20) for _ in range(4)]
    del held
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
PAGES_OF_ONE_ROUND = 4 * (6 << 20) // 4096


def faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", CYCLES, mode], capture_output=True, text=True, check=True,
                         timeout=60)
    return int(out.stdout)


@glibc_only
def test_freed_buffers_are_reused_instead_of_faulted_in_again() -> None:
    plain, kept = faults("plain"), faults("retain")
    # kept: the first round's pages serve all the others
    assert kept < 1.5 * PAGES_OF_ONE_ROUND
    # glibc by default trims its heap once the freed top passes twice the largest block: every round faults
    # (counted in pages; fewer, larger faults where huge pages are always on, but as many rounds of them)
    assert plain > 8 * kept, (plain, kept)

