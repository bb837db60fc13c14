"""A kafka-spark cache of a test's own: the state of `kafka-spark local` stays private, while the jars and the
class archives are the machine's (a fresh cache would fetch the jars and rebuild the archives on each run)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.fetch import TEST_SETS, jar_dir
from kafka_spark.local.jars import ARTIFACT_SETS, cache_dir


def private_cache(root: Path) -> dict[str, str]:
    """The environment, with `KAFKA_SPARK_CACHE` at `root/cache` sharing this machine's jars and archives."""
    cache = root / "cache"
    (cache / "jars").mkdir(parents=True)
    for name in [*ARTIFACT_SETS, *TEST_SETS]:
        if jar_dir(name).is_dir():
            (cache / "jars" / jar_dir(name).name).symlink_to(jar_dir(name))
    shared = cache_dir() / "jvm"
    shared.mkdir(parents=True, exist_ok=True)
    (cache / "jvm").symlink_to(shared)
    return {**os.environ, "KAFKA_SPARK_CACHE": str(cache)}
