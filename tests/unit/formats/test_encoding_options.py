"""The options of a `pykafka` write that serialise keys and values (no Spark): what they parse to, what they refuse,
the column checks they relax, and the registry's secrets hidden in Spark's plans."""

from __future__ import annotations

import re

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.spark.redaction import SECRET_OPTIONS_REGEX
from kafka_spark.spark.sink.options import check_columns, parse_sink_options

BROKERS = {"kafka.bootstrap.servers": "127.0.0.1:9092"}
REGISTRY = {"schema.registry.url": "http://127.0.0.1:8081"}


def test_formats_and_serializer_settings_parse_per_side():
    sink = parse_sink_options({**BROKERS, **REGISTRY, "topic": "orders", "valueFormat": "AVRO",
                               "keyFormat": "json-schema", "keySubject": "keys", "valueSubjectNameStrategy":
                               "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
                               "valueRecordName": "shop.Order", "use.latest.version": "true"})
    assert sink.payloads is not None and sink.payloads.registry.urls == ("http://127.0.0.1:8081",)
    value, key = sink.payloads.value, sink.payloads.key
    assert value is not None and key is not None
    assert (value.format.format, value.format.strategy, value.subject("orders")) == (
        "avro", "TopicRecordNameStrategy", "orders-shop.Order")
    assert (value.use_latest, value.auto_register) == (True, False)
    assert key.subject("orders") == "keys"
    assert (key.use_latest, key.auto_register) == (True, False)
    latest = parse_sink_options({**BROKERS, **REGISTRY, "valueFormat": "protobuf", "valueSchemaVersion": "latest"})
    assert latest.payloads is not None and latest.payloads.value is not None
    assert latest.payloads.value.use_latest


def test_binary_writes_are_unchanged():
    assert parse_sink_options({**BROKERS, "valueFormat": "binary"}).payloads is None
    with pytest.raises(ConfigError, match="needs valueFormat or keyFormat"):
        parse_sink_options({**BROKERS, **REGISTRY})
    with pytest.raises(ConfigError, match=r"'auto\.register\.schemas' needs valueFormat"):
        parse_sink_options({**BROKERS, "auto.register.schemas": "false"})


@pytest.mark.parametrize(("options", "message"), [
    ({"valueFormat": "avro"}, "need 'schema.registry.url'"),
    ({**REGISTRY, "valueFormat": "xml"}, "'valueFormat' must be one of"),
    ({**REGISTRY, "valueFormat": "avro", "mode": "PERMISSIVE"}, "unknown option 'mode' for a pykafka write"),
    ({**REGISTRY, "valueFormat": "avro", "valueSchemaId": "3", "use.latest.version": "true"},
     "use.latest.version=true and a pinned value schema"),
    ({**REGISTRY, "valueFormat": "avro", "schema.registry.basic.auth.user.info": "nocolon"}, "must be 'user:password'"),
])
def test_bad_options_name_themselves(options, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_sink_options({**BROKERS, **options})


def test_serialised_sides_take_any_column_type_and_the_rest_keep_sparks_checks():
    columns = {"key": "struct<a:int>", "value": "struct<id:bigint>"}
    check_columns(columns, "t", serialised=("key", "value"))
    with pytest.raises(ConfigError, match="key attribute unsupported type struct<a:int>"):
        check_columns(columns, "t", serialised=("value",))
    with pytest.raises(ConfigError, match="Required attribute 'value' not found"):
        check_columns({"key": "binary"}, "t", serialised=("value",))


def test_registry_secrets_are_among_the_options_spark_redacts():
    pattern = re.compile(SECRET_OPTIONS_REGEX)
    for name in ("schema.registry.basic.auth.user.info", "schema.registry.bearer.auth.token",
                 "schema.registry.ssl.key.password", "SCHEMA.REGISTRY.URL"):
        assert pattern.fullmatch(name), name
    assert not pattern.fullmatch("schema.registry.ssl.ca.location")
