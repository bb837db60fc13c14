"""The Java producer's murmur2 partitioner, with kafka-python as the oracle, its vectorised form against the
scalar one, and the range assignor."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as oracle_murmur2

from kafka_spark.client.groups.assignor import range_assign
from kafka_spark.client.producer.murmur_vector import murmur2_buffers, murmur2_many
from kafka_spark.client.producer.partitioner import StickyPartitioner, murmur2, partition_for_key
from kafka_spark.client.producer.send_plan import STICKY, key_partitions

GOLDEN = {b"21": -973932308, b"foobar": -790332482, b"": 275646681}  # Java's Utils.murmur2


def test_known_java_vectors():
    assert {key: murmur2(key) for key in GOLDEN} == GOLDEN
    assert murmur2_many(list(GOLDEN)).tolist() == list(GOLDEN.values())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=400))
def test_vectorised_murmur2_equals_the_scalar_one(keys):
    hashes = murmur2_many(keys)
    assert hashes.dtype == np.int32
    assert hashes.tolist() == [murmur2(k) for k in keys]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=60), st.data())
def test_vectorised_murmur2_reads_arrow_buffers_of_a_slice(keys, data):
    start = data.draw(st.integers(0, len(keys) - 1))
    column = pa.array(keys, pa.binary()).slice(start)
    _, offsets, values = column.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int32)[column.offset:column.offset + len(column) + 1]
    assert murmur2_buffers(np.frombuffer(values, dtype=np.uint8), offsets).tolist() == \
        [murmur2(k) for k in keys[start:]]


@given(st.lists(st.one_of(st.none(), st.binary(max_size=20)), max_size=50), st.integers(1, 1000))
def test_key_partitions_follow_the_java_formula_and_leave_null_keys_to_the_sticky_partitioner(keys, n):
    expected = [STICKY if k is None else (oracle_murmur2(k) & 0x7FFFFFFF) % n for k in keys]
    assert key_partitions(keys, n).tolist() == expected


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
