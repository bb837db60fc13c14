"""Fetching offset ranges from Kafka 4.1: exact ranges, transactions, data loss, oversized records, the CLI."""

from __future__ import annotations

import base64
import json

import pytest
from kafka import KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient

from kafka_spark.cli.main import main as cli
from kafka_spark.client import KafkaClient, OffsetOutOfRangeDataLoss, Producer, TopicPartition
from kafka_spark.client.errors import FetchTimeoutError


@pytest.fixture
def client(kafka):
    with KafkaClient({"bootstrap.servers": kafka.bootstrap, "max.partition.fetch.bytes": 65536,
                      "fetch.max.bytes": 131072, "default.api.timeout.ms": 5000,
                      "fetch.max.wait.ms": 200}) as c:
        yield c


def _offsets(reader) -> list[int]:
    table = reader.read_all()
    return [] if table is None else table.column("offset").to_pylist()


def test_exact_ranges_with_bounded_fetches(kafka, client, topic_name):
    kafka.create_topic(topic_name, partitions=1)
    kafka.tools.produce_perf(topic_name, 20_000, record_size=100, props={"compression.type": "lz4"})
    reader = client.fetch(topic_name, 0, 1_234, 17_001)
    assert _offsets(reader) == list(range(1_234, 17_001))
    # 64 KiB per request: many requests, each bounded
    assert reader.stats.requests >= (17_001 - 1_234) * 100 // 65536
    assert _offsets(client.fetch(topic_name, 0, 5, 5)) == []
    assert _offsets(client.fetch(topic_name, 0, 19_999, 20_000)) == [19_999]
    # asking past the end waits for the data, then says why it gave up
    with pytest.raises(FetchTimeoutError, match="high watermark"):
        _offsets(client.fetch(topic_name, 0, 19_990, 20_010, timeout_s=1))


def test_read_committed_drops_aborted_transactions_and_markers(kafka, client, topic_name):
    kafka.create_topic(topic_name, partitions=1)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id=f"{topic_name}-txn")
    producer.init_transactions()
    expected_committed, aborted = [], []
    for round_ in range(6):
        producer.begin_transaction()
        values = [f"r{round_}-{i}".encode() for i in range(5)]
        for v in values:
            producer.send(topic_name, v)
        producer.flush()
        if round_ % 2:
            producer.abort_transaction()
            aborted += values
        else:
            producer.commit_transaction()
            expected_committed += values
    producer.close()
    tp = TopicPartition(topic_name, 0)
    end = client.latest_offsets([tp], "read_committed")[tp]
    # 30 records and 6 markers: the range is longer than the records in it
    assert end == 36
    committed = client.fetch(topic_name, 0, 0, end, isolation_level="read_committed").read_all()
    assert committed.column("value").to_pylist() == expected_committed
    everything = client.fetch(topic_name, 0, 0, end, isolation_level="read_uncommitted").read_all()
    assert sorted(everything.column("value").to_pylist()) == sorted(expected_committed + aborted)
    offsets = everything.column("offset").to_pylist()
    assert offsets == sorted(offsets) and len(offsets) == 30 and offsets[-1] < end
    # a range starting inside an aborted transaction still drops it
    middle = client.fetch(topic_name, 0, 8, end, isolation_level="read_committed").read_all()
    assert middle.column("value").to_pylist() == expected_committed[5:]


def test_deleted_records_fail_or_are_skipped_and_counted(kafka, client, topic_name):
    kafka.create_topic(topic_name, partitions=1)
    kafka.tools.produce_perf(topic_name, 1_000, record_size=20)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.delete_records({KpTopicPartition(topic_name, 0): 400})
    finally:
        admin.close()
    with pytest.raises(OffsetOutOfRangeDataLoss, match="log start 400") as info:
        _offsets(client.fetch(topic_name, 0, 100, 600))
    assert info.value.offset == 100 and info.value.log_start_offset == 400
    reader = client.fetch(topic_name, 0, 100, 600, fail_on_data_loss=False)
    assert _offsets(reader) == list(range(400, 600))
    assert reader.stats.lost_offsets == 300
    gone = client.fetch(topic_name, 0, 0, 300, fail_on_data_loss=False)
    assert _offsets(gone) == [] and gone.stats.lost_offsets == 300


def test_a_record_larger_than_the_fetch_limits_is_still_returned(kafka, client, topic_name):
    kafka.create_topic(topic_name, partitions=1, configs={"max.message.bytes": 1_000_000})
    # ~600 KB, 9x max.partition.fetch.bytes (the harness broker's segments hold 1 MiB)
    big = bytes(range(256)) * 2_400
    with Producer({"bootstrap.servers": kafka.bootstrap, "max.request.size": 1_000_000,
                   "batch.size": 1_000_000}) as producer:
        producer.send(topic_name, b"small-1").get(timeout=30)
        producer.send(topic_name, big, key=b"big")
        producer.send(topic_name, b"small-2").get(timeout=30)
    table = client.fetch(topic_name, 0, 0, 3).read_all()
    assert table.column("value").to_pylist() == [b"small-1", big, b"small-2"]


def test_consume_cli_prints_a_range_as_json_lines(kafka, topic_name, capsys):
    kafka.create_topic(topic_name, partitions=2)
    kafka.tools.console_produce(topic_name, [f"k{i}:v{i}" for i in range(10)], key_separator=":")
    assert cli(["consume", "-b", kafka.bootstrap, "--topic", topic_name, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["value"] for r in rows) == sorted(f"v{i}" for i in range(10))
    assert all(r["key"] == "k" + r["value"][1:] for r in rows)
    assert cli(["consume", "-b", kafka.bootstrap, "--topic", topic_name, "--partition", "0", "--from", "1",
                "--max", "2"]) == 0
    out = capsys.readouterr().out
    assert "0:1 " in out and "0:2 " in out and "0:3 " not in out and out.rstrip().endswith("records")


def test_consume_cli_prints_one_line_per_record_whatever_the_bytes(kafka, topic_name, capsys):
    kafka.create_topic(topic_name)
    # A Confluent-framed key (schema id 10 is a newline byte), a value with line breaks, a header with a DEL
    values = [b"two\nlines\r\n", b"tab\there\x0bvt\x1cfs", "sep\u2028next\x85".encode(), b"plain"]
    key = b"\x00\x00\x00\x00\x0a\x04k0"
    with Producer({"bootstrap.servers": kafka.bootstrap}) as producer:
        for v in values:
            producer.send(topic_name, v, key=key, headers=[("h\n", b"x\x7fy")])
        producer.flush()
    assert cli(["consume", "-b", kafka.bootstrap, "--topic", topic_name]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["0:0", "0:1", "0:2", "0:3", "# 4 records"]
    assert [line.split("  value=", 1)[1] for line in lines[:4]] == [
        r"two\nlines\r\n  headers: h\n=x\x7fy", r"tab\there\x0bvt\x1cfs  headers: h\n=x\x7fy",
        r"sep\u2028next\x85  headers: h\n=x\x7fy", r"plain  headers: h\n=x\x7fy"]
    assert all(r"key=\x00\x00\x00\x00\n\x04k0  " in line for line in lines[:4])

    assert cli(["consume", "-b", kafka.bootstrap, "--topic", topic_name, "--json", "--base64"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [base64.b64decode(r["value"]) for r in rows] == values
    assert {base64.b64decode(r["key"]) for r in rows} == {key}
