"""Subject name strategies: Confluent's three, by short or Java class name in any case."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.formats.registry.subjects import STRATEGIES, subject_name


@pytest.mark.parametrize(("strategy", "is_key", "expected"), [
    ("TopicNameStrategy", False, "orders-value"),
    ("topicnamestrategy", True, "orders-key"),
    ("io.confluent.kafka.serializers.subject.TopicNameStrategy", False, "orders-value"),
    ("RecordNameStrategy", False, "shop.Order"),
    ("IO.CONFLUENT.KAFKA.SERIALIZERS.SUBJECT.RECORDNAMESTRATEGY", True, "shop.Order"),
    ("TopicRecordNameStrategy", True, "orders-shop.Order"),
    (" io.confluent.kafka.serializers.subject.TopicRecordNameStrategy ", False, "orders-shop.Order"),
])
def test_strategies(strategy: str, is_key: bool, expected: str) -> None:
    assert subject_name(strategy, "orders", is_key, "shop.Order") == expected


def test_topic_strategy_needs_no_record_name() -> None:
    assert subject_name("TopicNameStrategy", "t", False, None) == "t-value"


@pytest.mark.parametrize("strategy", ["RecordNameStrategy", "TopicRecordNameStrategy"])
def test_record_strategies_need_a_record_name(strategy: str) -> None:
    with pytest.raises(ConfigError, match=f"{strategy} needs the record's full name"):
        subject_name(strategy, "t", False, None)


def test_unknown_strategy_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown subject name strategy 'TopicStrategy'.*TopicNameStrategy, "
                                          "RecordNameStrategy, TopicRecordNameStrategy"):
        subject_name("TopicStrategy", "t", False, "r")
    assert STRATEGIES == ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
