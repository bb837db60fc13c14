"""Option validation mirrors Spark's Kafka source: same names, defaults and kinds of error."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.offsets import OffsetRange, TopicPartition
from kafka_spark.spark.source.options import parse_source_options, planned_ranges

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def parse(mode="batch", **opts):
    return parse_source_options({**BASE, **opts}, mode)


def test_defaults_match_spark():
    o = parse(subscribe="a, b,")
    assert o.subscribe == ("a", "b")
    assert o.starting.kind == "earliest" and o.ending.kind == "latest"
    assert o.fail_on_data_loss is True and o.include_headers is False
    assert o.min_partitions is None and o.max_records_per_partition is None
    assert parse("stream", subscribe="a").starting.kind == "latest"


def test_option_names_are_case_insensitive():
    o = parse(SUBSCRIBEPATTERN="top.*", STARTINGOFFSETS="earliest", includeheaders="TRUE")
    assert o.pattern == "top.*" and o.include_headers


@pytest.mark.parametrize(("opts", "message"), [
    ({}, "One of the following options must be specified for Kafka source"),
    ({"subscribe": "a", "assign": '{"a":[0]}'}, "Only one of the following options can be specified"),
    ({"subscribe": " , "}, "No topics to subscribe to"),
    ({"subscribePattern": " "}, "Pattern to subscribe is empty"),
    ({"subscribePattern": "a("}, "invalid regular expression"),
    ({"assign": "a:0"}, "No topicpartitions to assign"),
    ({"subscribe": "a", "startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"subscribe": "a", "endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, "startingOffsets for a-0 can't be latest"),
    ({"subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, "ending offset for a-0 can't be earliest"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"0":5}}', "endingOffsets": '{"a":{"1":9}}'}, "same topic-partitions"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"0":9}}', "endingOffsets": '{"a":{"0":5}}'},
     "start offset 9 is greater than the end offset 5 for topic a partition 0"),
    ({"subscribe": "a", "startingTimestamp": "yesterday"}, "Expected a single long value"),
    ({"subscribe": "a", "minPartitions": "0"}, "minPartitions must be positive"),
    ({"subscribe": "a", "maxRecordsPerPartition": "-3"}, "maxRecordsPerPartition must be positive"),
    ({"subscribe": "a", "minPartitions": "many"}, "must be a positive integer"),
    ({"subscribe": "a", "failOnDataLoss": "yes"}, "'failOnDataLoss' must be 'true' or 'false'"),
    ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "'auto.offset.reset' is not supported"),
    ({"subscribe": "a", "kafka.value.deserializer": "x"}, "'value.deserializer' is not supported"),
    ({"subscribe": "a", "kafka.enable.auto.commit": "true"}, "'enable.auto.commit' is not supported"),
    ({"subscribe": "a", "startingOffsetsByTimestampStrategy": "closest"}, "must be 'error' or 'latest'"),
    ({"subscribe": "a", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, "is higher than"),
    ({"subscribe": "a", "maxTriggerDelay": "soon"}, "expected a duration"),
    ({"subscribe": "a", "startingOfsets": "earliest"}, "did you mean 'startingOffsets'"),
])
def test_invalid_options_fail_naming_the_problem(opts, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_source_options({**BASE, **opts} if opts else BASE, "batch")


def test_bootstrap_servers_is_required():
    with pytest.raises(ConfigError, match=r"'kafka\.bootstrap\.servers' must be specified"):
        parse_source_options({"subscribe": "a"})


def test_streaming_rejects_ending_offsets():
    with pytest.raises(ConfigError, match="ending offset not valid in streaming queries"):
        parse("stream", subscribe="a", endingOffsets="latest")
    with pytest.raises(ConfigError, match="ending timestamp not valid in streaming queries"):
        parse("stream", subscribe="a", endingOffsetsByTimestamp='{"a":{"0":5}}')
    # Spark's stream validation does not look at endingTimestamp: it is accepted and has no effect.
    assert parse("stream", subscribe="a", endingTimestamp="5").starting.kind == "latest"


def test_stream_defaults_to_latest_and_schema_checks_accept_both_modes():
    assert parse("stream", subscribe="a").starting.kind == "latest"
    assert parse("batch", subscribe="a").starting.kind == "earliest"
    # schema() cannot know the mode: 'latest' must pass there, and fail only for a batch reader.
    assert parse("any", subscribe="a", startingOffsets="latest").starting.kind == "latest"
    with pytest.raises(ConfigError, match="can't be latest for batch"):
        parse("batch", subscribe="a", startingOffsets="latest")


def test_commit_offsets_to_kafka_needs_a_group():
    with pytest.raises(ConfigError, match=r"kafka\.group\.id"):
        parse("stream", subscribe="a", commitOffsetsToKafka="true")
    assert parse("stream", subscribe="a", commitOffsetsToKafka="true", **{"kafka.group.id": "g"}
                 ).commit_offsets_to_kafka


def test_timestamp_preference_order_is_sparks():
    o = parse(subscribe="a", startingTimestamp="1000", startingOffsetsByTimestamp='{"a":{"0":5}}',
              startingOffsets="earliest")
    assert o.starting.kind == "timestamp" and o.starting.timestamp == 1000
    o = parse(subscribe="a", startingOffsetsByTimestamp='{"a":{"0":5}}', startingOffsets="earliest")
    assert o.starting.kind == "timestamps" and o.starting.timestamps == {TopicPartition("a", 0): 5}


def test_assign_and_kafka_params_pass_through():
    o = parse(assign='{"a":[0,2],"b":[1]}', **{"kafka.security.protocol": "SSL", "kafka.fetch.max.bytes": "1000"})
    assert o.assign == (TopicPartition("a", 0), TopicPartition("a", 2), TopicPartition("b", 1))
    assert o.kafka == {"bootstrap.servers": "127.0.0.1:9092", "security.protocol": "SSL", "fetch.max.bytes": "1000"}


def test_trigger_options_parse():
    o = parse("stream", subscribe="a", maxOffsetsPerTrigger="100", minOffsetsPerTrigger="10", maxTriggerDelay="30s")
    assert (o.max_offsets_per_trigger, o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (100, 10, 30_000)


@pytest.mark.parametrize(("text", "ms"), [("1111", 1111), ("30s", 30_000), ("15m", 900_000), ("2min", 120_000),
                                          ("1h", 3_600_000), ("1d", 86_400_000), ("1500us", 1), (" 10 ms ", 10)])
def test_max_trigger_delay_reads_like_sparks_time_strings(text, ms):
    assert parse("stream", subscribe="a", minOffsetsPerTrigger="1", maxTriggerDelay=text).max_trigger_delay_ms == ms


def planned(ranges: str | None, **opts):
    raw = {**BASE, "assign": '{"t":[0,1]}', "startingOffsets": '{"t":{"0":0,"1":5}}',
           "endingOffsets": '{"t":{"0":10,"1":5}}', **opts}
    if ranges is not None:
        raw["plannedRanges"] = ranges
    return planned_ranges(raw, parse_source_options(raw, "batch", own_options=("plannedRanges",)))


def test_planned_ranges_are_read_as_given_when_they_cover_the_read_exactly():
    assert planned('[["t",0,0,4,1],["t",0,4,10,null]]') == [OffsetRange("t", 0, 0, 4, 1), OffsetRange("t", 0, 4, 10)]
    assert planned(None) is None
    for bad in ('[["t",0,0,9,1]]', '[["t",0,0,4,1],["t",0,5,10,1]]', '[["t",0,0,10,1],["t",2,0,1,1]]',
                '[["t",0,0,10,1],["t",0,0,10,1]]'):
        with pytest.raises(ConfigError, match="plannedRanges' must cover the assigned partitions"):
            planned(bad)
    with pytest.raises(ConfigError, match="plannedRanges"):
        planned('[["t",0,0,10,1]]', endingOffsets="latest")
    with pytest.raises(ConfigError, match="unknown option 'plannedranges'"):
        parse("stream", subscribe="t", plannedRanges="[]")
