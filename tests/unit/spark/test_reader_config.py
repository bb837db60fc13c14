"""The client properties a Spark task reads its range with."""

from kafka_spark.spark.reader import RANGE_PARTITION_FETCH_BYTES, range_client_config


def test_larger_partition_fetch_by_default() -> None:
    config = range_client_config({"bootstrap.servers": "b:9092"})
    assert config == {"bootstrap.servers": "b:9092", "max.partition.fetch.bytes": str(RANGE_PARTITION_FETCH_BYTES)}


def test_user_setting_wins() -> None:
    assert range_client_config({"max.partition.fetch.bytes": "700"}) == {"max.partition.fetch.bytes": "700"}


def test_capped_by_fetch_max_bytes() -> None:
    assert range_client_config({"fetch.max.bytes": "1000"})["max.partition.fetch.bytes"] == "1000"
