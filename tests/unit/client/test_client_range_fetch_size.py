"""How many bytes a range reader asks per partition fetch."""

from __future__ import annotations

from kafka_spark.client.config import ClientConfig
from kafka_spark.client.fetch.fetcher import RANGE_PARTITION_FETCH_BYTES, range_partition_fetch_bytes

BOOTSTRAP = {"bootstrap.servers": "b:9092"}


def test_a_known_range_fetches_more_than_the_consumer_default() -> None:
    config = ClientConfig(BOOTSTRAP)
    assert config.max_partition_fetch_bytes == 1 << 20  # the Java consumer's default is untouched
    assert range_partition_fetch_bytes(config) == RANGE_PARTITION_FETCH_BYTES > config.max_partition_fetch_bytes


def test_the_users_setting_wins_even_when_it_equals_the_default() -> None:
    for value in (700, 1 << 20):
        assert range_partition_fetch_bytes(ClientConfig({**BOOTSTRAP, "max.partition.fetch.bytes": value})) == value


def test_capped_by_fetch_max_bytes() -> None:
    assert range_partition_fetch_bytes(ClientConfig({**BOOTSTRAP, "fetch.max.bytes": 1000})) == 1000
