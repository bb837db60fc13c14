"""The stream reader resolves its initial offsets once per query, as Spark's own Kafka source does.

Spark calls `initialOffset()` twice in a query's first trigger (to plan batch 0 and to read it); the
second call must answer the same without asking Kafka again.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.offsets import zookeeper_group
from kafka_spark.spark.source import stream_planner
from kafka_spark.spark.source.options import parse_source_options
from kafka_spark.spark.source.partition import KafkaInputPartition
from kafka_spark.spark.source.stream import KafkaStreamReader

P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)


@pytest.fixture
def kafka(monkeypatch):
    """A topic whose log end moves by 10 records every time its offsets are listed."""
    state = SimpleNamespace(end=100, lookups=[])

    def selected(_cluster, _options):
        state.lookups.append("metadata")
        return [P0, P1]

    def starts(_cluster, spec, tps, *_args):
        state.lookups.append(f"starts:{spec.kind}")
        state.end += 10
        return dict.fromkeys(tps, 0 if spec.kind == "earliest" else state.end)

    def latest(_cluster, _options, _known=None):
        state.lookups.append("latest")
        state.end += 10
        return {P0: state.end, P1: state.end}

    monkeypatch.setattr(stream_planner, "selected_partitions", selected)
    monkeypatch.setattr(zookeeper_group, "resolve_starts", starts)
    monkeypatch.setattr(stream_planner, "fetch_latest", latest)
    return state


def reader(starting: str) -> KafkaStreamReader:
    r = KafkaStreamReader(parse_source_options(
        {"kafka.bootstrap.servers": "h:9092", "subscribe": "t", "startingOffsets": starting}, "stream"))
    r._cluster = SimpleNamespace(close=lambda: None)  # type: ignore[assignment]
    return r


@pytest.mark.parametrize("starting", ["earliest", "latest"])
def test_the_initial_offsets_are_looked_up_once_per_query(kafka, starting):
    r = reader(starting)
    first = r.initialOffset()
    end = r.latestOffset(first, ReadAllAvailable())
    assert r.initialOffset() == first
    assert kafka.lookups == ["metadata", f"starts:{starting}", "latest"]
    assert end == ({"t": {"0": 120, "1": 120}} if starting == "earliest" else first)


def test_batch_0_of_a_stream_started_at_latest_still_reads_nothing(kafka):
    r = reader("latest")
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    assert r.partitions(r.initialOffset(), end) == []
    # the next batch reads what arrived since: from the initial offsets to the log end now
    later = r.latestOffset(end, ReadAllAvailable())
    assert later == {"t": {"0": 130, "1": 130}}
    parts = r.partitions(end, later)
    assert all(isinstance(p, KafkaInputPartition) for p in parts)
    assert [(p.range.start, p.range.end) for p in parts if isinstance(p, KafkaInputPartition)] == [(110, 130)] * 2


def test_a_new_reader_resolves_again(kafka):
    assert reader("latest").initialOffset() != reader("latest").initialOffset()
    assert kafka.lookups.count("starts:latest") == 2
