"""The stream planner's latest-offset lookup when a topic goes away between listing and ListOffsets."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_spark.client.errors import UnknownTopicError
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.spark.source import stream_planner
from kafka_spark.spark.source.options import parse_source_options


@pytest.fixture
def cluster(monkeypatch):
    """Topic `t-b` is listed by the first selection, then deleted before its offsets are listed."""
    selections = [[TopicPartition("t-a", 0), TopicPartition("t-b", 0)], [TopicPartition("t-a", 0)]]
    calls = []

    def selected(_cluster, _options):
        return selections.pop(0) if len(selections) > 1 else selections[0]

    def latest(_cluster, tps, _isolation):
        calls.append(list(tps))
        if TopicPartition("t-b", 0) in tps:
            raise UnknownTopicError("topic 't-b' does not exist in the cluster")
        return dict.fromkeys(tps, 7)

    monkeypatch.setattr(stream_planner, "selected_partitions", selected)
    monkeypatch.setattr(stream_planner, "latest_offsets", latest)
    return SimpleNamespace(config=SimpleNamespace(isolation_level="read_uncommitted"), calls=calls)


def test_a_pattern_topic_deleted_while_listing_offsets_is_listed_again(cluster):
    options = parse_source_options({"kafka.bootstrap.servers": "h:9092", "subscribePattern": "t-.*"}, "stream")
    assert stream_planner.fetch_latest(cluster, options, interval_s=0) == {TopicPartition("t-a", 0): 7}
    assert len(cluster.calls) == 2


def test_a_subscribed_topic_that_is_gone_stays_an_error(cluster):
    options = parse_source_options({"kafka.bootstrap.servers": "h:9092", "subscribe": "t-a,t-b"}, "stream")
    with pytest.raises(UnknownTopicError):
        stream_planner.fetch_latest(cluster, options, interval_s=0)
    assert len(cluster.calls) == 1
