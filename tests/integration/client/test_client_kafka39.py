"""Kafka 3.9 in ZooKeeper mode: metadata, offsets and fetch with the versions it negotiates, formats v0/v1."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.protocol import ApiKey


def test_metadata_offsets_and_fetch_on_kafka39(kafka39, topic_name):
    tools = kafka39.tools
    kafka39.create_topic(topic_name, partitions=2)
    tools.produce_perf(topic_name, 5_000, record_size=64, props={"compression.type": "snappy"})
    with KafkaClient({"bootstrap.servers": kafka39.bootstrap, "max.partition.fetch.bytes": 32768}) as client:
        conn = client.cluster.any_connection()
        # 3.9 serves older maxima than 4.1 (e.g. Fetch 17, Metadata 12)
        assert conn.version(ApiKey.FETCH) < 18 and conn.version(ApiKey.METADATA) <= 12
        tps = client.partitions(topic_name)
        latest = client.latest_offsets(tps)
        out = tools.run("get-offsets", "--topic", topic_name, "--time", "-1").stdout.split()
        assert {TopicPartition(topic_name, int(line.split(":")[1])): int(line.split(":")[2]) for line in out} == latest
        total = 0
        for tp in tps:
            table = client.fetch(topic_name, tp.partition, 0, latest[tp]).read_all()
            rows = 0 if table is None else table.num_rows
            if rows:
                assert table.column("offset").to_pylist() == list(range(latest[tp]))
            total += rows
        assert total == 5_000


@pytest.mark.parametrize(("magic", "fmt"), [(0, "0.9.0"), (1, "0.10.2")])
def test_legacy_message_formats_are_fetched(kafka39_legacy, topic_name, magic, fmt):
    tools = kafka39_legacy.tools
    kafka39_legacy.create_topic(topic_name, configs={"message.format.version": fmt})
    lines = [f"k{i}:value-{i}" for i in range(25)]
    tools.console_produce(topic_name, lines, props={"enable.idempotence": "false", "compression.type": "gzip",
                                                     "linger.ms": 100}, key_separator=":")
    with KafkaClient({"bootstrap.servers": kafka39_legacy.bootstrap}) as client:
        tp = TopicPartition(topic_name, 0)
        end = client.latest_offsets([tp])[tp]
        assert end == 25
        table = client.fetch(topic_name, 0, 3, end).read_all()
        assert table.column("offset").to_pylist() == list(range(3, 25))
        assert table.column("key").to_pylist() == [f"k{i}".encode() for i in range(3, 25)]
        assert table.column("value").to_pylist() == [f"value-{i}".encode() for i in range(3, 25)]
        micros = set(table.column("timestamp").cast(pa.int64()).to_pylist())
        # v0 messages have no timestamp: Kafka reports -1 ms, as Spark's source does
        assert micros == {-1000} if magic == 0 else min(micros) > 0
