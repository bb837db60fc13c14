"""The stream's data-loss and AvailableNow errors say what Spark's Kafka source says, word for word.

The oracle is Spark's own `KafkaExceptions`, called in the test's JVM with the same partitions and
offsets; ours prefix the condition, as a Python error cannot carry it otherwise.
"""

from __future__ import annotations

import logging

import pytest

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.spark.source import stream_planner
from kafka_spark.spark.source.options import parse_source_options
from kafka_spark.spark.source.stream import AvailableNowError, KafkaStreamReader
from kafka_spark.spark.source.stream_planner import StreamDataLossError, plan_micro_batch

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Option:
    """A Scala `Option` argument for the oracle (None: Scala's None)."""

    def __init__(self, value: str | None) -> None:
        self.value = value


@pytest.fixture
def spark_text(spark):
    """Spark's message for `KafkaExceptions.<name>(*args)`; partitions, sets and maps converted."""
    jvm = spark._jvm
    convert = jvm.scala.jdk.javaapi.CollectionConverters

    def jvm_value(value):
        if isinstance(value, TopicPartition):
            return jvm.org.apache.kafka.common.TopicPartition(value.topic, value.partition)
        if isinstance(value, set):
            items = jvm.java.util.LinkedHashSet()
            for v in sorted(value):
                items.add(jvm_value(v))
            return convert.asScala(items).toSet()
        if isinstance(value, dict):
            items = jvm.java.util.LinkedHashMap()
            for k, v in sorted(value.items()):
                items.put(jvm_value(k), v)
            immutable_map = getattr(getattr(jvm.scala.collection.immutable, "Map$"), "MODULE$")
            return getattr(immutable_map, "from")(convert.asScala(items))
        if isinstance(value, Option):
            return jvm.scala.Option.apply(value.value)
        return value

    def text(name: str, *args) -> str:
        exceptions = jvm.org.apache.spark.sql.kafka010.KafkaExceptions
        return getattr(exceptions, name)(*map(jvm_value, args)).getMessage()

    return text


@pytest.fixture
def planner(monkeypatch):
    """plan_micro_batch against a cluster whose earliest offsets are `earliest` (no broker)."""
    earliest: dict[TopicPartition, int] = {}
    monkeypatch.setattr(stream_planner, "earliest_offsets", lambda _c, tps: {tp: earliest[tp] for tp in tps
                                                                             if tp in earliest})
    monkeypatch.setattr(stream_planner, "_leaders", lambda _c, _tps: {})

    def plan(start, end, fail=True, **kafka):
        options = parse_source_options({"kafka.bootstrap.servers": "h:9092", "subscribe": "t",
                                        "failOnDataLoss": str(fail).lower(),
                                        **{f"kafka.{k.replace('_', '.')}": v for k, v in kafka.items()}}, "stream")
        return plan_micro_batch(None, options, start, end)

    plan.earliest = earliest
    return plan


def error_of(plan, *args, **kwargs) -> str:
    with pytest.raises(StreamDataLossError) as info:
        plan(*args, **kwargs)
    return str(info.value)


def test_data_loss_errors_are_sparks(planner, spark_text):
    condition = "[KAFKA_DATA_LOSS.{}] ".format
    assert error_of(planner, {T0: 5}, {T0: 2}) == (
        condition("PARTITION_OFFSET_CHANGED") + spark_text("partitionOffsetChanged", T0, 5, 2))
    assert error_of(planner, {T0: 1, T1: 1}, {T1: 1}) == (
        condition("PARTITIONS_DELETED") + spark_text("partitionsDeleted", {T0}, Option(None)))
    assert error_of(planner, {T0: 1, T1: 1}, {T1: 1}, group_id="g") == (
        condition("PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT")
        + spark_text("partitionsDeleted", {T0}, Option("group.id")))
    planner.earliest[T1] = 3
    assert error_of(planner, {T0: 1}, {T0: 1, T1: 9}) == (
        condition("ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO")
        + spark_text("addedPartitionDoesNotStartFromZero", T1, 3))
    planner.earliest.clear()
    assert error_of(planner, {T0: 1}, {T0: 1, T1: 9}) == (
        condition("INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS")
        + spark_text("initialOffsetNotFoundForPartitions", {T1}))


def test_the_lenient_mode_logs_sparks_warning_and_skips(planner, caplog):
    caplog.set_level(logging.WARNING, logger=stream_planner.__name__)
    assert planner({T0: 5, T1: 1}, {T0: 2, T1: 4}, fail=False)[0].topic_partition == T1
    assert planner({T0: 1, T1: 1}, {T1: 3}, fail=False)[0].topic_partition == T1
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings[0].startswith("Partition t-0's offset was changed from 5 to 2. This could be either 1)")
    assert warnings[1].startswith("Set(t-0) are gone. Some data may have been missed.. ")
    assert all('set the source option "failOnDataLoss" to "true"' in w for w in warnings)


def test_available_now_errors_are_sparks(spark_text):
    reader = KafkaStreamReader(parse_source_options(
        {"kafka.bootstrap.servers": "h:9092", "subscribe": "t"}, "stream"))
    reader._snapshot = {T0: 5}
    with pytest.raises(AvailableNowError) as info:
        reader._verify_available_now({T0: 5, T1: 1})
    assert str(info.value) == "[MISMATCHED_TOPIC_PARTITIONS_BETWEEN_END_OFFSET_AND_PREFETCHED] " + spark_text(
        "mismatchedTopicPartitionsBetweenEndOffsetAndPrefetched", {T0}, {T0, T1})
    with pytest.raises(AvailableNowError) as info:
        reader._verify_available_now({T0: 6})
    assert str(info.value) == "[END_OFFSET_HAS_GREATER_OFFSET_FOR_TOPIC_PARTITION_THAN_PREFETCHED] " + spark_text(
        "endOffsetHasGreaterOffsetForTopicPartitionThanPrefetched", {T0: 5}, {T0: 6})
