"""Spark's micro-batch admission rules: the `maxOffsetsPerTrigger` division and the `minOffsetsPerTrigger` gate."""

from __future__ import annotations

import pytest

from kafka_spark.offsets import TopicPartition
from kafka_spark.offsets.admission import LONG_MAX, TriggerGate, behind_latest, rate_limit


def tp(p: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, p)


def no_new(tps):
    raise AssertionError(f"earliest offsets fetched for {tps} although no partition is new")


def test_sparks_max_offsets_per_trigger_example_batches():
    # KafkaMicroBatchSourceSuite "maxOffsetsPerTrigger": p0 holds 101 records, p1 11, p2 1, limit 10.
    latest = {tp(0): 101, tp(1): 11, tp(2): 1}
    start = {tp(0): 0, tp(1): 0, tp(2): 0}
    batches = []
    for _ in range(4):
        end = rate_limit(10, start, latest, no_new)
        batches.append({p.partition: end[p] - start[p] for p in end})
        start = end
    assert batches == [{0: 8, 1: 1, 2: 1}, {0: 9, 1: 1, 2: 0}, {0: 9, 1: 1, 2: 0}, {0: 9, 1: 1, 2: 0}]


def test_each_nonempty_partition_gets_at_least_one_offset():
    end = rate_limit(1, {tp(0): 0, tp(1): 0}, {tp(0): 5, tp(1): 5}, no_new)
    assert end == {tp(0): 1, tp(1): 1}  # two offsets in all: more than the limit, as in Spark


def test_floors_can_leave_the_batch_below_the_limit():
    end = rate_limit(20, {tp(0): 0, tp(1): 0, tp(2): 0}, {tp(0): 21, tp(1): 11, tp(2): 1}, no_new)
    assert sum(end.values()) == 19 and end == {tp(0): 12, tp(1): 6, tp(2): 1}


def test_new_partitions_start_at_their_earliest_and_deleted_ones_disappear():
    asked = []

    def earliest(tps):
        asked.append(sorted(tps))
        return {tp(2): 10}

    start = {tp(0): 0, tp(1): 5}
    end = rate_limit(10, start, {tp(0): 10, tp(2): 20}, earliest)
    assert asked == [[tp(2)]]
    assert end == {tp(0): 5, tp(2): 15}


def test_nothing_to_read_returns_until_unchanged_even_when_lower():
    until = {tp(0): 3, tp(1): 7}
    assert rate_limit(10, {tp(0): 5, tp(1): 7}, until, no_new) == until


def test_saturates_at_long_max():
    end = rate_limit(2**62, {tp(0): LONG_MAX - 10}, {tp(0): LONG_MAX}, no_new)
    assert end == {tp(0): LONG_MAX}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_min_offsets_gate_follows_sparks_composite_example():
    # KafkaMicroBatchSourceSuite "compositeReadLimit": min 15, delay 5 s, max 20, a clock that starts at 0.
    clock = Clock()
    clock.now = 0.0
    gate = TriggerGate(15, 5000, clock)
    start = {tp(0): 0, tp(1): 0, tp(2): 0}
    latest = {tp(0): 21, tp(1): 11, tp(2): 1}
    assert not gate.delay(start, latest)  # 33 pending
    start = rate_limit(20, start, latest, no_new)
    assert sum(start.values()) == 19
    assert gate.delay(start, latest)  # 14 pending, under the minimum, delay not expired
    latest = {tp(0): 29, tp(1): 21, tp(2): 2}  # +19: 17, 15 and 1 pending
    assert not gate.delay(start, latest)  # 33 pending
    start = rate_limit(20, start, latest, no_new)
    assert {p.partition: start[p] for p in start} == {0: 22, 1: 15, 2: 2}
    assert gate.delay(start, latest)  # 13 pending
    clock.now += 5.0
    assert not gate.delay(start, latest)  # the delay expired: read the 13


def test_min_offsets_gate_counts_new_partitions_from_zero():
    gate = TriggerGate(10, 60_000, Clock())
    gate.last_trigger_ms = 1_000_000
    assert not gate.delay({tp(0): 100}, {tp(0): 100, tp(1): 10})
    gate.last_trigger_ms = 1_000_000
    assert gate.delay({tp(0): 100}, {tp(0): 105})


@pytest.mark.parametrize(("latest", "consumed", "expected"), [
    ({tp(0): 10, tp(1): 20}, {tp(0): 7, tp(1): 20}, {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "3",
                                                      "avgOffsetsBehindLatest": "1.5"}),
    ({tp(0): 10, tp(1): 4}, {tp(0): 10}, {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "0",
                                          "avgOffsetsBehindLatest": "0.0"}),
    ({}, {tp(0): 1}, {}),
    ({tp(0): 1}, {}, {}),
])
def test_offsets_behind_latest_are_sparks_metrics(latest, consumed, expected):
    assert behind_latest(latest, consumed) == expected


def test_a_batch_loads_cap_is_the_same_division_filled_to_the_cap():
    # The example above, as a batch load's record cap: the floors (8, 0, 0) leave 2, which go to the largest
    # backlogs; no share is raised to one, so the cap is never passed.
    latest = {tp(0): 101, tp(1): 11, tp(2): 1}
    end = rate_limit(10, dict.fromkeys(latest, 0), latest, exact=True)
    assert end == {tp(0): 9, tp(1): 1, tp(2): 0}
    assert rate_limit(1, {tp(0): 0, tp(1): 0}, {tp(0): 5, tp(1): 5}, exact=True) == {tp(0): 1, tp(1): 0}
    even = {tp(p): 1000 for p in range(3)}
    assert sum(rate_limit(1000, dict.fromkeys(even, 0), even, exact=True).values()) == 1000


def test_a_filled_cap_takes_everything_under_it_and_stays_exact_for_huge_offsets():
    latest = {tp(0): 30, tp(1): 7}
    assert rate_limit(100, {tp(0): 10, tp(1): 7}, latest, exact=True) == latest
    big = 2**60
    end = rate_limit(big + 1, {tp(0): 0, tp(1): 0}, {tp(0): big, tp(1): big}, exact=True)
    assert sum(end.values()) == big + 1
