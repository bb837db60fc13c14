"""Exactly-once Kafka -> Delta loads: crashes at any point, re-runs and resumes lose and duplicate nothing."""

from __future__ import annotations

import json
import random
from pathlib import Path

from delta_support import KILLS, WRITERS, keep_producing, latest_offsets_of, produce_numbered, run_killable
from deltalake import DeltaTable

from kafka_spark.delta import committed_position

LOAD_ONCE = Path(__file__).parent / "load_once.py"


def test_sigkill_at_random_points_keeps_every_record_exactly_once(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=3)
    produce_numbered(producer, topic_name, 3000)
    table = str(tmp_path / "table")
    rng = random.Random(20261121)
    # Targeted points of the commit protocol (in the suite: after Spark's writer's commit; the direct writer's is
    # killed there by the stores test), then kills at random moments of a run; a random kill
    # that comes after the run already finished counts as a clean run, and another kill is tried. The runs
    # alternate between Spark's writer and the direct one, each resuming the other's commits.
    plan = ["after-commit", "after-commit", "before-write", "before-write"][:max(1, KILLS - 1)]
    outcomes = []
    with keep_producing(producer, topic_name, start=3000, step=50):
        attempts = 0
        while sum(1 for _, code in outcomes if code != 0) < KILLS and attempts < KILLS + 8:
            crash_at = plan[attempts] if attempts < len(plan) else None
            kill_after = None if crash_at else rng.uniform(3.0, 14.0)
            writer = WRITERS[attempts % 2]
            code, _ = run_killable(LOAD_ONCE, kafka.bootstrap, topic_name, table, "1500", crash_at=crash_at,
                                   kill_after=kill_after, writer=writer)
            outcomes.append((f"{writer}:{crash_at or f'kill@{kill_after:.1f}s'}", code))
            attempts += 1
    kills = [o for o in outcomes if o[1] != 0]
    assert len(kills) >= KILLS, outcomes
    # Catch up with no crash until a run's committed offsets are the topic's ends (nothing is produced now).
    latest = latest_offsets_of(kafka.bootstrap, topic_name)
    ends = {str(tp.partition): end for tp, end in latest.items()}
    for attempt in range(10):
        code, out = run_killable(LOAD_ONCE, kafka.bootstrap, topic_name, table, "1000000",
                                 writer=WRITERS[attempt % 2])
        assert code == 0, out
        if json.loads(out.strip().splitlines()[-1])["offsets"].get(topic_name) == ends:
            break
    rows = spark.read.format("delta").load(table)
    dupes = rows.groupBy("topic", "partition", "offset").count().where("count > 1").count()
    assert dupes == 0
    for tp, end in latest.items():
        offsets = [r[0] for r in rows.where(f"partition = {tp.partition}").select("offset").collect()]
        assert sorted(offsets) == list(range(end)), f"{tp}: missing or extra offsets"
    # The Delta log, read independently, agrees with the position we resume from.
    position = committed_position(table, "crash-test")
    dt = DeltaTable(table)
    assert dt.transaction_version("kafka-spark/crash-test") == position.batch
    meta = json.loads(dt.history(1)[0]["userMetadata"])
    assert meta["batch"] == position.batch
    assert {int(p): o for p, o in meta["offsets"][topic_name].items()} == {
        tp.partition: off for tp, off in position.offsets.items()}
