"""Our producer, read back by Kafka's console consumer, partitions records like the Java producer."""

from __future__ import annotations

import pytest

from kafka_spark.cli.main import main as cli
from kafka_spark.client import KafkaClient, Producer, ProducerError, TopicPartition
from kafka_spark.client.config import COMPRESSION_TYPES

KEYS = [f"key-{i}" for i in range(40)]


def _console_rows(tools, topic: str, count: int) -> list[tuple[int, str, str, str]]:
    out = tools.run("console-consumer", "--topic", topic, "--from-beginning", "--max-messages", str(count),
                    "--timeout-ms", "20000", "--property", "print.key=true", "--property", "print.partition=true",
                    "--property", "print.headers=true").stdout
    rows = []
    for line in out.splitlines():
        partition, headers, key, value = line.split("\t")
        rows.append((int(partition.removeprefix("Partition:")), headers, key, value))
    return rows


def test_records_match_the_java_producer(kafka, topic_name, tmp_path, capsys):
    tools = kafka.tools
    kafka.create_topic(topic_name, partitions=6)
    # the Java producer writes java-* values, ours ours-* values with the same keys
    tools.console_produce(topic_name, [f"{k}:java-{k}" for k in KEYS], key_separator=":")
    sent = {}
    for i, codec in enumerate(COMPRESSION_TYPES):
        config = {"bootstrap.servers": kafka.bootstrap, "compression.type": codec, "linger.ms": 10,
                  "enable.idempotence": i % 2 == 0}
        with Producer(config) as producer:
            keys = KEYS[i::len(COMPRESSION_TYPES)]
            futures = {k: producer.send(topic_name, f"ours-{k}".encode(), key=k.encode(),
                                        headers=[("codec", codec.encode()), ("empty", None)]) for k in keys}
            producer.flush()
            sent.update({k: f.get(timeout=10) for k, f in futures.items()})
    # the CLI producer: from a file, keys split on ':', a header on every record
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{k}:cli-{k}\n" for k in KEYS[:5]))
    assert cli(["produce", "-b", kafka.bootstrap, "--topic", topic_name, "--file", str(lines),
                "--key-separator", ":", "--header", "src=cli", "--json"]) == 0
    assert '"records": 5' in capsys.readouterr().out

    rows = _console_rows(tools, topic_name, 2 * len(KEYS) + 5)
    java = {key: p for p, _, key, value in rows if value.startswith("java-")}
    ours = {key: (p, h, value) for p, h, key, value in rows if value.startswith("ours-")}
    cli_rows = {key: (p, h) for p, h, key, value in rows if value.startswith("cli-")}
    assert len(java) == len(ours) == len(KEYS) and len(set(java.values())) > 1
    for key in KEYS:
        partition, headers, value = ours[key]
        assert partition == java[key] == sent[key].partition
        assert value == f"ours-{key}"
        assert headers.startswith("codec:") and headers.endswith(",empty:null")
    assert all(p == java[k] and h == "src:cli" for k, (p, h) in cli_rows.items())


def test_offsets_are_assigned_in_order_and_errors_are_typed(kafka, topic_name):
    kafka.create_topic(topic_name, partitions=1)
    with Producer({"bootstrap.servers": kafka.bootstrap, "batch.size": 200, "linger.ms": 50}) as producer:
        futures = [producer.send(topic_name, b"x" * 50) for _ in range(30)]
        producer.flush()
        assert [f.get().offset for f in futures] == list(range(30))
        with pytest.raises(ProducerError, match=r"partitions 0\.\.0"):
            producer.send(topic_name, b"v", partition=3)
        with pytest.raises(ProducerError, match=r"max\.request\.size"):
            producer.send(topic_name, b"v" * 2_000_000)
    with Producer({"bootstrap.servers": kafka.bootstrap, "acks": 0}) as producer:
        unacknowledged = [producer.send(topic_name, b"fire-and-forget") for _ in range(5)]
        producer.flush()
        assert {f.get().offset for f in unacknowledged} == {-1}
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        tp = TopicPartition(topic_name, 0)
        assert client.latest_offsets([tp])[tp] == 35
