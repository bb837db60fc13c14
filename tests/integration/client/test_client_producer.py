"""Our producer, read back by Kafka's console consumer, partitions records like the Java producer; with five
Produce requests in flight, idempotent and transactional writes hold every record once, in order per partition."""

from __future__ import annotations

import time
import uuid

import pytest
from partition_values import read_back

from kafka_spark.cli.main import main as cli
from kafka_spark.client import KafkaClient, Producer, ProducerError, TopicPartition
from kafka_spark.client.properties import COMPRESSION_TYPES
from kafka_spark.errors import BrokerError

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


def test_arrow_columns_with_every_codec_read_back_by_the_console_consumer(kafka, topic_name):
    # send_many with Arrow columns: batches of hundreds of records, laid out from the columns, for every codec
    import pyarrow as pa

    kafka.create_topic(topic_name, partitions=3)
    expected = []
    for codec in COMPRESSION_TYPES:
        keys = [None if i % 9 == 0 else f"{codec}-k{i % 17}" for i in range(600)]
        values = [f"{codec}-v{i}-" + "x" * (i % 40) for i in range(600)]
        config = {"bootstrap.servers": kafka.bootstrap, "compression.type": codec, "linger.ms": 50,
                  "batch.size": 1_000_000}
        with Producer(config) as producer:
            sent = producer.send_many(topic_name, pa.array(values, pa.string()), keys=pa.array(keys, pa.string()))
            producer.flush()
            assert sent.get(10) == 600
            places = [f.get(1).partition for f in sent.futures()]
        expected += [(p, "null" if k is None else k, v) for p, k, v in zip(places, keys, values, strict=True)]
    rows = _console_rows(kafka.tools, topic_name, len(expected))
    assert sorted((p, key, value) for p, _, key, value in rows) == sorted(expected)
    from kafka_spark.client.producer.partitioner import partition_for_key

    assert all(p == partition_for_key(key.encode(), 3) for p, _, key, _ in rows if key != "null")


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


PARTITIONS = 4
PER_PARTITION = 4000


def _many_records(producer: Producer, topic: str) -> dict[int, list[bytes]]:
    """PER_PARTITION records of 100 B to each partition, in one call, partition by partition interleaved."""
    values = {p: [b"p%d-%06d-" % (p, i) + b"v" * 88 for i in range(PER_PARTITION)] for p in range(PARTITIONS)}
    order = [(i, p) for i in range(PER_PARTITION) for p in range(PARTITIONS)]
    sent = producer.send_many(topic, [values[p][i] for i, p in order], partitions=[p for _, p in order])
    return values if sent.get(30) == len(order) else {}


def _in_flight_peak(producer: Producer) -> list[int]:
    # the most Produce requests the sender had unanswered to one broker, sampled before each wait for an answer
    peak = [0]
    receive = producer._receive_oldest

    def sampled() -> None:
        peak[0] = max(peak[0], *(len(q) for q in producer._requests.values()))
        receive()

    producer._receive_oldest = sampled  # type: ignore[method-assign]
    return peak


def test_five_in_flight_idempotent_writes_each_record_once_in_order(kafka, topic_name):
    kafka.create_topic(topic_name, partitions=PARTITIONS)
    config = {"bootstrap.servers": kafka.bootstrap, "enable.idempotence": True, "batch.size": 4096,
              "linger.ms": 5, "max.in.flight.requests.per.connection": 5}
    started = time.monotonic()
    with Producer(config) as producer:
        peak = _in_flight_peak(producer)
        values = _many_records(producer, topic_name)
    took = time.monotonic() - started
    assert read_back(kafka.bootstrap, topic_name, PARTITIONS) == values
    print(f"{PARTITIONS * PER_PARTITION} records, {took:.2f}s, at most {peak[0]} requests in flight")
    assert 1 < peak[0] <= 5


def test_five_in_flight_transactional_writes_each_record_once_in_order(kafka, topic_name):
    kafka.create_topic(topic_name, partitions=PARTITIONS)
    config = {"bootstrap.servers": kafka.bootstrap, "transactional.id": f"inflight-{uuid.uuid4().hex[:8]}",
              "batch.size": 4096, "linger.ms": 5, "max.in.flight.requests.per.connection": 5}
    with Producer(config) as producer:
        peak = _in_flight_peak(producer)
        producer.init_transactions()
        producer.begin_transaction()
        aborted = _many_records(producer, topic_name)
        producer.abort_transaction()
        producer.begin_transaction()
        values = _many_records(producer, topic_name)
        producer.commit_transaction()
    assert aborted == values
    deadline = time.monotonic() + 30  # the commit markers are written after EndTxn is answered
    while ((got := read_back(kafka.bootstrap, topic_name, PARTITIONS, committed=True)) != values
           and time.monotonic() < deadline):
        time.sleep(0.1)
    assert got == values
    assert 1 < peak[0] <= 5


def test_a_batch_refused_for_good_among_five_in_flight_leaves_the_others_once_in_order(kafka, topic_name):
    # A compacted topic refuses a record without a key (INVALID_RECORD): the batch holding one fails, the batches
    # after it in flight are refused out of order, and the producer bumps its epoch and writes them again from 0.
    kafka.create_topic(topic_name, partitions=1, configs={"cleanup.policy": "compact"})
    config = {"bootstrap.servers": kafka.bootstrap, "enable.idempotence": True, "batch.size": 1000,
              "linger.ms": 60000, "max.in.flight.requests.per.connection": 5}
    values = [b"%05d-" % i + b"v" * 94 for i in range(140)]  # 7 records a batch
    keys = [None if i == 20 else b"k%d" % i for i in range(140)]  # record 20: in the third batch (14..20)
    with Producer(config) as producer:
        sent = producer.send_many(topic_name, values, keys=keys, partitions=[0] * 140)
        producer.flush(30)
        futures = sent.futures()
        with pytest.raises(BrokerError, match="INVALID_RECORD"):
            futures[20].get(0)
        offsets = [f.get(0).offset for f in futures[:14] + futures[21:]]
    assert offsets == list(range(133))
    assert read_back(kafka.bootstrap, topic_name, 1)[0] == values[:14] + values[21:]
