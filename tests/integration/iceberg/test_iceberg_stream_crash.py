"""A routed stream into Iceberg killed with SIGKILL while records keep arriving: right after a table's commit (the
other tables of that micro-batch not yet written), then, in the long schedule (KAFKA_SPARK_KILLS=10), at random
moments with the two writers taking turns; restarts without the checkpoint resume from the tables alone. Every
table ends with each offset once, as pyiceberg reads it."""

from __future__ import annotations

import os
import random
import shutil
import uuid
from pathlib import Path

import pytest
from delta_support import keep_producing, latest_offsets_of, run_killable
from iceberg_stream_once import SINK, routed_options
from iceberg_support import every_offset_once, produce

from kafka_spark.iceberg import committed_position, start_stream

SCRIPT = Path(__file__).parent / "iceberg_stream_once.py"
KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "1"))


def test_sigkills_of_a_routed_stream_keep_every_iceberg_table_exact(kafka, spark, producer, catalog, tmp_path):
    prefix = f"icekill_{uuid.uuid4().hex[:6]}"
    topics = [f"{prefix}_{i}" for i in range(2)]
    for topic in topics:
        kafka.create_topic(topic, partitions=2)
        produce(producer, topic, 200)
    pattern, checkpoint = f"^{prefix}_", str(tmp_path / "checkpoint")
    rng = random.Random(20261129)
    outcomes: list[tuple[str, int]] = []
    with keep_producing(producer, topics[0], 200, 10):
        for attempt in range(2 * KILLS):
            if sum(1 for _, code in outcomes if code != 0) >= KILLS:
                break
            if attempt % 3 == 1:  # a restart without the checkpoint resumes from the tables alone
                shutil.rmtree(checkpoint, ignore_errors=True)
            crash_at = "after-commit" if attempt == 0 else None
            writer = "pyiceberg" if attempt % 2 else "direct"
            code, out = run_killable(SCRIPT, kafka.bootstrap, pattern, str(catalog.warehouse), checkpoint, "1s",
                                     "60", writer, "1" if crash_at else "0", crash_at=crash_at,
                                     kill_after=None if crash_at else rng.uniform(1.0, 5.0), ready="started")
            assert code in (0, -9), out
            outcomes.append((crash_at or "kill", code))
    assert sum(1 for _, code in outcomes if code != 0) >= KILLS, outcomes
    # Some table committed before the first kill; the catch-up starts without the checkpoint, from the tables.
    assert any(committed_position(f"db.{t}", SINK, catalog) is not None for t in topics)
    shutil.rmtree(checkpoint, ignore_errors=True)
    query = start_stream(spark, routed_options(kafka.bootstrap, pattern, checkpoint, "available-now", "direct"),
                         catalog)
    try:
        assert query.awaitTermination(180)
    finally:
        query.stop()
    assert query.exception() is None
    for topic in topics:
        ends = latest_offsets_of(kafka.bootstrap, topic)
        every_offset_once(catalog, f"db.{topic}", ends)
        assert committed_position(f"db.{topic}", SINK, catalog).offsets == ends


pytestmark = [pytest.mark.integration, pytest.mark.spark]
