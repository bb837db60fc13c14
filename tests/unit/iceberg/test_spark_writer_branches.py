"""The staging branches of Spark's Iceberg writer that a sink's next batch removes: its own earlier batches' only,
never another sink's (whose id may start as this one's does, or hold dashes) nor a racing run's of this batch."""

from __future__ import annotations

from kafka_spark.iceberg.spark_append import STAGE_PREFIX, stale_branches


def branch(batch: int, run: str, sink: str) -> str:
    return f"{STAGE_PREFIX}{batch}-{run}-{sink}"


def test_only_the_sinks_own_earlier_batches_are_stale() -> None:
    refs = ["main", "audit",
            branch(3, "0a1b2c3d", "a"), branch(4, "1a1b2c3d", "a"), branch(5, "2a1b2c3d", "a"),
            branch(2, "3a1b2c3d", "a-1"), branch(1, "4a1b2c3d", "a-b-c"), branch(1, "5a1b2c3d", "b")]
    assert stale_branches(refs, "a", 5) == [branch(3, "0a1b2c3d", "a"), branch(4, "1a1b2c3d", "a")]
    assert stale_branches(refs, "a-1", 5) == [branch(2, "3a1b2c3d", "a-1")]
    assert stale_branches(refs, "a-b-c", 2) == [branch(1, "4a1b2c3d", "a-b-c")]
    # a racing run's branch of the same batch stays, and nothing is stale at batch 0
    assert stale_branches(refs, "b", 1) == [] and stale_branches(refs, "a", 0) == []


def test_sink_ids_with_other_characters_match_as_the_branch_names_them() -> None:
    refs = [branch(0, "6a1b2c3d", "orders_v2"), f"{STAGE_PREFIX}x-6a1b2c3d-orders_v2", f"{STAGE_PREFIX}0"]
    assert stale_branches(refs, "orders.v2", 1) == [branch(0, "6a1b2c3d", "orders_v2")]
