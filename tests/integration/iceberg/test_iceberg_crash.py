"""A load killed between its data files and its commit (and, in the long schedule, right after the commit) leaves
no duplicate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from iceberg_support import every_offset_once, new_topic, produce

from kafka_spark.iceberg import committed_position, load
from kafka_spark.sink import LoadOptions
from kafka_spark.sink.crash import CRASH_ENV

SCRIPT = Path(__file__).parent / "iceberg_load_once.py"


def killed_load(*args: str, crash_at: str) -> subprocess.CompletedProcess[str]:
    """iceberg_load_once.py in a process of its own that kills itself (SIGKILL) at `crash_at`."""
    return subprocess.run([sys.executable, str(SCRIPT), *args], env={**os.environ, CRASH_ENV: crash_at},
                          capture_output=True, text=True, timeout=300, check=False)


# The default writer's kills in the suite; pyiceberg's (the same commit loop: batch_append.commit_batch) in the long
# schedule (KAFKA_SPARK_KILLS > 2).
KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "2"))
LONG = pytest.mark.skipif(KILLS <= 2, reason="long: KAFKA_SPARK_KILLS=10")


@pytest.mark.parametrize("writer", ["direct", pytest.param("pyiceberg", marks=LONG)])
def test_a_load_killed_around_its_commit_loads_every_offset_once(kafka, spark, producer, catalog, writer):
    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 300)
    args = (kafka.bootstrap, topic, str(catalog.warehouse), "db.crashed", "100", writer)
    # killed with batch 0's data files written but not committed: nothing of it is in the table
    proc = killed_load(*args, crash_at="before-commit")
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert committed_position("db.crashed", "crash-test", catalog) is None
    data = Path(catalog.warehouse) / "db" / "crashed" / "data"
    assert data.is_dir() and any(data.rglob("*.parquet"))  # the files of the batch that never committed
    opts = LoadOptions(table="db.crashed", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       sink_id="crash-test", max_records=100, writer=writer)
    if KILLS > 2:
        # killed right after committing batch 0, before anything else: the table alone says where it is (the
        # suite's kill after a commit is the routed stream's, test_iceberg_stream_crash.py)
        proc = killed_load(*args, crash_at="after-commit")
        assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
        position = committed_position("db.crashed", "crash-test", catalog)
        assert position is not None and position.batch == 0
    else:
        assert load(spark, opts, catalog).batch == 0
    batches = []
    while (result := load(spark, opts, catalog)).status == "committed":
        batches.append((result.batch, result.rows))
        assert result.writer == writer
    assert batches == [(1, 100), (2, 100)]
    every_offset_once(catalog, "db.crashed", result.offsets)
