"""Offset JSON and Spark-compatible splitting of offset ranges into tasks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_spark.errors import ConfigError
from kafka_spark.offsets import OffsetRange, TopicPartition, offsets_from_json, offsets_to_json, split_ranges


def test_offsets_json_round_trip_with_sentinels():
    text = '{"b":{"0":-2},"a":{"1":-1,"0":23}}'
    parsed = offsets_from_json(text, "startingOffsets")
    assert parsed == {TopicPartition("a", 0): 23, TopicPartition("a", 1): -1, TopicPartition("b", 0): -2}
    assert offsets_to_json(parsed) == '{"a":{"0":23,"1":-1},"b":{"0":-2}}'


@pytest.mark.parametrize("bad", ["[1]", '{"a": 3}', '{"a": {"0": "x"}}', '{"a": {"zero": 1}}', "{", '{"a":{"0":true}}'])
def test_bad_offsets_json_names_the_option(bad):
    with pytest.raises(ConfigError, match="startingOffsets"):
        offsets_from_json(bad, "startingOffsets")


def test_no_split_without_limits_and_empty_ranges_dropped():
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 5, 5)]
    assert split_ranges(ranges) == [OffsetRange("t", 0, 0, 100)]


def test_min_partitions_splits_large_ranges_proportionally():
    # Spark: with minPartitions=4 a 300-offset range and a 100-offset range become 3 + 1 tasks.
    ranges = [OffsetRange("t", 0, 0, 300), OffsetRange("t", 1, 0, 100)]
    out = split_ranges(ranges, min_partitions=4)
    assert [(r.partition, r.start, r.end) for r in out] == [(0, 0, 100), (0, 100, 200), (0, 200, 300), (1, 0, 100)]


def test_max_records_per_partition_cuts_evenly():
    out = split_ranges([OffsetRange("t", 0, 10, 35)], max_records_per_partition=10)
    assert [(r.start, r.end) for r in out] == [(10, 18), (18, 26), (26, 35)]


@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=8),
       st.one_of(st.none(), st.integers(1, 40)), st.one_of(st.none(), st.integers(1, 5000)))
def test_splits_cover_every_offset_exactly_once(bounds, min_parts, max_records):
    ranges = [OffsetRange("t", i, min(a, b), max(a, b)) for i, (a, b) in enumerate(bounds)]
    out = split_ranges(ranges, min_partitions=min_parts, max_records_per_partition=max_records)
    for r in ranges:
        pieces = sorted((p.start, p.end) for p in out if p.partition == r.partition)
        covered = [o for s, e in pieces for o in range(s, e)]
        assert covered == list(range(r.start, r.end))
    if max_records:
        assert all(p.size <= max_records for p in out)
