"""`exactlyOnce` and `transactionalIdPrefix` of a pykafka write: parsed, defaulted and checked at planning."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.spark.sink.options import EXACTLY_ONCE_TIMEOUT_MS, parse_sink_options
from kafka_spark.spark.sink.transactions import transactional_id

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_off_by_default():
    sink = parse_sink_options(BASE)
    assert (sink.exactly_once, sink.transactional_id_prefix) == (False, None)
    assert "transaction.timeout.ms" not in sink.kafka


def test_on_with_a_prefix_and_a_long_transaction_timeout():
    sink = parse_sink_options({**BASE, "ExactlyOnce": "TRUE", "transactionalIdPrefix": " etl "})
    assert (sink.exactly_once, sink.transactional_id_prefix) == (True, "etl")
    assert sink.client_config().transaction_timeout_ms == int(EXACTLY_ONCE_TIMEOUT_MS)
    given = parse_sink_options({**BASE, "exactlyOnce": "true", "kafka.transaction.timeout.ms": "120000"})
    assert given.client_config().transaction_timeout_ms == 120000
    assert transactional_id("etl", 7) == "etl-7"


def test_stream_options_pass():
    sink = parse_sink_options({**BASE, "checkpointLocation": "/tmp/c", "exactlyOnce": "false"})
    assert not sink.exactly_once


@pytest.mark.parametrize(("options", "message"), [
    ({"exactlyOnce": "yes"}, "exactlyOnce must be true or false"),
    ({"transactionalIdPrefix": "p"}, "transactionalIdPrefix applies only with exactlyOnce=true"),
    ({"exactlyOnce": "true", "transactionalIdPrefix": " "}, "transactionalIdPrefix must not be empty"),
    ({"exactlyOnce": "true", "kafka.acks": "1"}, "kafka.enable.idempotence must not be false"),
    ({"exactlyOnce": "true", "kafka.enable.idempotence": "false"}, "kafka.enable.idempotence must not be false"),
    ({"exactlyOnce": "true", "kafka.transactional.id": "t"}, "use transactionalIdPrefix"),
    ({"kafka.transactional.id": "t"}, "use transactionalIdPrefix"),
])
def test_bad_combinations_name_the_option(options, message):
    with pytest.raises(ConfigError, match=message):
        parse_sink_options({**BASE, **options})
