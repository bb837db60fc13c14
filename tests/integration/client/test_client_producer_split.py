"""A topic whose ``max.message.bytes`` (20,000) is far below ``batch.size`` (262,144): the broker refuses the
producer's batches with MESSAGE_TOO_LARGE, the producer splits them and sends the pieces again, and every record
lands once, in order per partition (plain with one request in flight, idempotent and transactional with five),
with the offsets its future gives; a record too large alone fails with MessageTooLargeError."""

from __future__ import annotations

import time
import uuid

import pytest
from partition_values import read_back

from kafka_spark.client import KafkaClient, Producer
from kafka_spark.errors import MessageTooLargeError  # type: ignore[attr-defined]

PARTITIONS = 4
PER_PARTITION = 3000
TOPIC_LIMIT = 20000
BASE = {"batch.size": 262144, "linger.ms": 50, "max.in.flight.requests.per.connection": 5}


def _values(partition: int, n: int) -> list[bytes]:
    return [b"p%d-%06d-" % (partition, i) + b"v" * 290 for i in range(n)]  # 300 B: ~850 records a 256 KiB batch


@pytest.mark.parametrize("mode", ["plain", "idempotent", "transactional"])
def test_batches_over_the_topics_limit_are_split_and_land_once_in_order(kafka, topic_name, mode):
    kafka.create_topic(topic_name, partitions=PARTITIONS, configs={"max.message.bytes": TOPIC_LIMIT})
    config = {"bootstrap.servers": kafka.bootstrap, **BASE, "enable.idempotence": mode != "plain"}
    if mode == "plain":
        config["max.in.flight.requests.per.connection"] = 1  # more could reorder a split batch's records, as Java
    if mode == "transactional":
        config["transactional.id"] = f"split-{uuid.uuid4().hex[:8]}"
    values = {p: _values(p, PER_PARTITION) for p in range(PARTITIONS)}
    order = [(i, p) for i in range(PER_PARTITION) for p in range(PARTITIONS)]
    started = time.monotonic()
    with Producer(config) as producer:
        if mode == "transactional":
            producer.init_transactions()
            producer.begin_transaction()
        sent = producer.send_many(topic_name, [values[p][i] for i, p in order], partitions=[p for _, p in order])
        if mode == "transactional":
            producer.commit_transaction()
        assert sent.get(60) == len(order)
        limit = producer._size_caps.get(topic_name)
    took = time.monotonic() - started
    print(f"{mode}: {len(order)} records in {took:.2f}s, batches built at {limit} bytes after the split")
    assert limit is not None and limit <= TOPIC_LIMIT, "the broker refused nothing: the test does not split"
    deadline = time.monotonic() + 30  # a commit's markers are written after EndTxn is answered
    while (got := read_back(kafka.bootstrap, topic_name, PARTITIONS, mode == "transactional")) != values \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert got == values, "records lost, repeated or reordered"
    for (i, p), future in zip(order, sent.futures(), strict=True):
        meta = future.get(0)
        assert (meta.partition, meta.offset) == (p, i)


def test_a_record_over_the_topics_limit_alone_fails_and_the_others_land(kafka, topic_name):
    kafka.create_topic(topic_name, partitions=1, configs={"max.message.bytes": TOPIC_LIMIT})
    values = _values(0, 2000)
    values[1500] = b"big" + b"x" * 30000
    with Producer({"bootstrap.servers": kafka.bootstrap, **BASE, "enable.idempotence": True}) as producer:
        sent = producer.send_many(topic_name, values, partitions=[0] * len(values))
        producer.flush(60)
        futures = sent.futures()
        with pytest.raises(MessageTooLargeError) as failed:
            futures[1500].get(0)
        offsets = [f.get(0).offset for f in futures[:1500] + futures[1501:]]
    message = str(failed.value)
    print(message)
    assert "partition 0 of topic" in message and topic_name in message and "max.message.bytes" in message
    assert offsets == list(range(len(values) - 1))
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        table = client.fetch(topic_name, 0, 0, len(values) - 1).read_all()
    assert table is not None and table.column("value").to_pylist() == values[:1500] + values[1501:]
