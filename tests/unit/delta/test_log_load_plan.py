"""Planning a back-fill from log files (`log_load.plan_files`): from the table's position to the end of the files."""

from __future__ import annotations

import pytest

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.log_load import plan_files
from kafka_spark.errors import DataLossError
from kafka_spark.sink.errors import ConcurrentWriterError
from kafka_spark.sink.position import SinkCommit
from kafka_spark.spark.log.planner import PartitionBounds

A0, A1, A2 = (TopicPartition("a", p) for p in range(3))


def commit(offsets: dict[TopicPartition, int], batch: int = 4, sink: str = "default") -> SinkCommit:
    return SinkCommit(sink_id=sink, batch=batch, offsets=offsets, start_offsets={}, run_id="r", committed_at_ms=0)


def test_a_new_table_starts_where_asked_and_reads_to_the_end_of_the_files():
    plan = plan_files({A0: PartitionBounds(5, 5, 50), A1: PartitionBounds(0, 30, 30)}, None, [], None, True)
    assert (plan.batch, plan.start, plan.end, plan.reading) == (0, {A0: 5, A1: 30}, {A0: 50, A1: 30}, [A0])
    assert plan.committed_offsets() == {A0: 50, A1: 30}


def test_the_next_batch_continues_the_table_and_new_partitions_start_at_their_beginning():
    previous = commit({A0: 20, A1: 30, TopicPartition("gone", 0): 7})
    bounds = {A0: PartitionBounds(0, 0, 50), A1: PartitionBounds(0, 0, 10), A2: PartitionBounds(3, 9, 8)}
    plan = plan_files(bounds, previous, [], None, True)
    # A1's files end before the table's position (an older copy): nothing to read there, no error.
    assert (plan.batch, plan.start, plan.end) == (5, {A0: 20, A1: 30, A2: 3}, {A0: 50, A1: 30, A2: 8})
    assert plan.new_partitions == [A2] and plan.carried == {TopicPartition("gone", 0): 7}
    capped = plan_files(bounds, previous, [], 10, True)
    assert capped.size == 10


def test_offsets_deleted_before_they_were_loaded_fail_or_are_skipped_and_counted():
    bounds = {A0: PartitionBounds(40, 40, 50)}
    with pytest.raises(DataLossError, match=r"20\.\.39"):
        plan_files(bounds, commit({A0: 20}), [], None, True)
    plan = plan_files(bounds, commit({A0: 20}), [], None, False)
    assert (plan.start, plan.lost) == ({A0: 40}, {A0: 20})


def test_partitions_another_sink_holds_are_refused():
    with pytest.raises(ConcurrentWriterError, match="sink 'other'"):
        plan_files({A0: PartitionBounds(0, 0, 5)}, None, [commit({A0: 3}, sink="other")], None, True)
