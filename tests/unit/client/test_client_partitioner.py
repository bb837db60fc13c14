"""The Java producer's murmur2 partitioner, with kafka-python as the oracle, and the range assignor."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as oracle_murmur2

from kafka_spark.client.assignor import range_assign
from kafka_spark.client.partitioner import StickyPartitioner, murmur2, partition_for_key


def test_known_java_vectors():
    # values computed by Java's Utils.murmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"") == 275646681


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data):
    assert murmur2(data) & 0xFFFFFFFF == oracle_murmur2(data)


@given(st.binary(min_size=1, max_size=32), st.integers(1, 1000))
def test_key_partition_matches_the_java_formula(key, n):
    assert partition_for_key(key, n) == (oracle_murmur2(key) & 0x7FFFFFFF) % n


def test_sticky_partitioner_keeps_null_keys_together_until_a_batch_completes():
    p = StickyPartitioner()
    first = p.partition("t", None, 6)
    assert all(p.partition("t", None, 6) == first for _ in range(20))
    p.batch_completed("t", 6)
    assert p.partition("t", None, 6) != first
    assert p.partition("t", b"k", 6) == partition_for_key(b"k", 6)


def test_range_assignor_gives_contiguous_ranges_with_extras_first():
    plan = range_assign({"m2": ["a", "b"], "m1": ["a"], "m3": ["a"]}, {"a": 7, "b": 2})
    assert plan == {"m1": {"a": [0, 1, 2]}, "m2": {"a": [3, 4], "b": [0, 1]}, "m3": {"a": [5, 6]}}
    assert range_assign({"m1": ["x"]}, {}) == {"m1": {}}
