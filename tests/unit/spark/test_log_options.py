"""pykafka-log's options: pykafka's names, checks and messages, no brokers needed, plus where the files are."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.spark.log.options import DEFAULT_TASK_BYTES, parse_log_options


def test_a_pykafka_query_runs_unchanged_with_a_path() -> None:
    opts = parse_log_options({"kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "SSL",
                              "subscribe": "a, b", "path": "/data/k1,s3a://bucket/k-*", "includeHeaders": "true",
                              "kafka.isolation.level": "read_committed", "fs.s3a.endpoint": "http://s3:9000"})
    assert opts.paths == ("/data/k1", "s3a://bucket/k-*")
    assert opts.source.subscribe == ("a", "b") and opts.source.include_headers
    assert opts.isolation == "read_committed" and opts.store == {"fs.s3a.endpoint": "http://s3:9000"}
    assert not opts.skip_corrupt and opts.replica_dir is None and opts.task_bytes == DEFAULT_TASK_BYTES


def test_brokers_are_not_required_but_paths_are() -> None:
    assert parse_log_options({"assign": '{"t":[0]}', "path": "/x"}).source.assign
    with pytest.raises(ConfigError, match="option 'path' must name"):
        parse_log_options({"subscribe": "t"})


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "t", "path": "/x", "skipCorruptBatch": "true"},
     "unknown option 'skipcorruptbatch' for the pykafka-log source; did you mean 'skipCorruptBatches'"),
    ({"path": "/x"}, "One of the following options must be specified for Kafka source"),
    ({"subscribe": "t", "path": "/x", "kafka.auto.offset.reset": "earliest"},
     "Kafka option 'auto.offset.reset' is not supported"),
    ({"subscribe": "t", "path": "/x", "startingOffsets": "latest"},
     "starting offset can't be latest for batch queries on Kafka"),
    ({"subscribe": "t", "path": "/x", "skipCorruptBatches": "yes"}, "'skipCorruptBatches' must be 'true' or 'false'"),
    ({"subscribe": "t", "path": "/x", "bytesPerTask": "0"}, "'bytesPerTask' must be a positive integer"),
    ({"subscribe": "t", "path": "/x", "kafka.isolation.level": "committed"}, "kafka.isolation.level must be one of"),
    ({"subscribe": "t", "path": "/x", "minPartitions": "0"}, "minPartitions must be positive"),
])
def test_bad_options_fail_naming_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_log_options(options)
