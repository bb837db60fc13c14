"""Sink options and column checks follow Spark's Kafka sink: same rules, same messages."""

from __future__ import annotations

import pytest

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError
from kafka_spark.spark.sink.options import HEADERS_TYPE, check_columns, parse_sink_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_idempotent_by_default_unless_acks_is_lowered():
    assert parse_sink_options(BASE).client_config().enable_idempotence
    assert not parse_sink_options({**BASE, "kafka.acks": "1"}).client_config().enable_idempotence
    with pytest.raises(ConfigError, match="requires acks=all"):
        parse_sink_options({**BASE, "kafka.acks": "1", "kafka.enable.idempotence": "true"})


def test_the_sink_builds_larger_batches_than_the_java_producer_unless_told():
    # The producer splits a batch a topic's max.message.bytes refuses, so the sink can default to larger ones;
    # the producer itself keeps Java's default.
    assert parse_sink_options(BASE).client_config().batch_size == 1_000_000
    assert parse_sink_options({**BASE, "kafka.batch.size": "16384"}).client_config().batch_size == 16384
    assert parse_sink_options({**BASE, "exactlyOnce": "true"}).client_config().batch_size == 1_000_000
    assert ClientConfig({"bootstrap.servers": "127.0.0.1:9092"}).batch_size == 16384


def test_the_sink_lingers_longer_than_the_java_producer_unless_told():
    assert parse_sink_options(BASE).client_config().linger_ms == 100
    assert parse_sink_options({**BASE, "kafka.linger.ms": "5"}).client_config().linger_ms == 5
    assert parse_sink_options({**BASE, "exactlyOnce": "true"}).client_config().linger_ms == 100
    assert ClientConfig({"bootstrap.servers": "127.0.0.1:9092"}).linger_ms == 5
    # requests that carry many partitions' batches, unless the user sets Java's limit
    assert parse_sink_options(BASE).client_config().max_request_size == 16 << 20
    assert parse_sink_options({**BASE, "kafka.max.request.size": "1048576"}).client_config().max_request_size == 1 << 20
    assert ClientConfig({"bootstrap.servers": "127.0.0.1:9092"}).max_request_size == 1 << 20


def test_topic_option_and_producer_properties():
    sink = parse_sink_options({**BASE, "TOPIC": " out ", "kafka.compression.type": "zstd", "kafka.linger.ms": "20"})
    assert sink.topic == "out"
    config = sink.client_config()
    assert (config.compression_type, config.linger_ms) == ("zstd", 20)


@pytest.mark.parametrize(("options", "message"), [
    ({}, "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"),
    ({**BASE, "kafka.key.serializer": "x"}, "Kafka option 'key.serializer' is not supported"),
    ({**BASE, "kafka.value.serializer": "x"}, "Kafka option 'value.serializer' is not supported"),
    ({**BASE, "subscribe": "t"}, "unknown option 'subscribe'"),
    ({**BASE, "kafka.compression.type": "brotli"}, "compression.type"),
])
def test_bad_options(options, message):
    with pytest.raises(ConfigError, match=message):
        parse_sink_options(options)


def test_accepted_columns():
    check_columns({"topic": "string", "key": "binary", "value": "string", "partition": "int",
                   "headers": HEADERS_TYPE, "other": "bigint"}, None)
    # With the topic option, the topic column is neither needed nor checked.
    check_columns({"topic": "bigint", "value": "binary"}, "t")
    check_columns({"value": "binary"}, "t")


@pytest.mark.parametrize(("columns", "message"), [
    ({"value": "string"}, "topic option required when no 'topic' attribute is present. Use the topic option "
                          "for setting a topic."),
    ({"topic": "int", "value": "string"}, "topic attribute unsupported type int. topic must be a(n) string"),
    ({"topic": "string"}, "Required attribute 'value' not found"),
    ({"topic": "string", "value": "int"}, "value attribute unsupported type int. value must be a(n) string or binary"),
    ({"topic": "string", "value": "string", "key": "bigint"}, "key attribute unsupported type bigint"),
    ({"topic": "string", "value": "string", "partition": "bigint"},
     "partition attribute unsupported type bigint. partition must be a(n) int"),
    ({"topic": "string", "value": "string", "headers": "map<string,binary>"},
     f"headers attribute unsupported type map<string,binary>. headers must be a(n) {HEADERS_TYPE}"),
])
def test_column_errors(columns, message):
    with pytest.raises(ConfigError) as info:
        check_columns(columns, None)
    assert str(info.value) == message or str(info.value).startswith(message)


@pytest.mark.parametrize(("given", "idempotent"), [
    ({}, "true"),
    ({"kafka.max.in.flight.requests.per.connection": "5"}, "true"),
    ({"kafka.max.in.flight.requests.per.connection": "10"}, None),  # Java: more than 5 in flight turns it off
    ({"kafka.retries": "0"}, None),
    ({"kafka.acks": "1"}, None),
])
def test_idempotence_is_the_default_only_where_javas_producer_makes_it_so(given, idempotent):
    sink = parse_sink_options({"kafka.bootstrap.servers": "b:9092", **given})
    assert sink.kafka.get("enable.idempotence") == idempotent
