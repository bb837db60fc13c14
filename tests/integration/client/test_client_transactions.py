"""Transactions of our producer on Kafka 4.1 and 3.9: committed records are seen by read_committed readers (ours
and Kafka's own console consumer), aborted and fenced ones never, and another process can end a transaction."""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_spark.client import KafkaClient, Producer, TopicPartition
from kafka_spark.client.cluster import Cluster
from kafka_spark.client.errors import TransactionError, TransactionFencedError
from kafka_spark.client.producer.transactions import end_transaction, end_transactions


@pytest.fixture(params=["kafka", "kafka39"], ids=["kafka-4.1", "kafka-3.9"])
def broker(request):
    return request.getfixturevalue(request.param)


def committed_values(bootstrap: str, topic: str, settled: bool = True) -> list[str]:
    """What our fetcher returns under read_committed; with `settled`, once every transaction's marker is
    written (the coordinator writes them after answering EndTxn, so the stable offset trails briefly)."""
    with KafkaClient({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as client, \
            KafkaClient({"bootstrap.servers": bootstrap}) as uncommitted:
        tps = client.partitions(topic)
        ends = client.latest_offsets(tps)
        deadline = time.monotonic() + 30
        while settled and ends != uncommitted.latest_offsets(tps) and time.monotonic() < deadline:
            time.sleep(0.05)
            ends = client.latest_offsets(tps)
        out: list[str] = []
        for tp in tps:
            for batch in client.fetch(topic, tp.partition, 0, ends[tp]):
                out += [v.decode() for v in batch.column("value").to_pylist()]
    return sorted(out)


def java_committed_values(broker, topic: str, count: int) -> list[str]:
    """What Kafka's console consumer prints under read_committed."""
    out = broker.tools.run("console-consumer", "--topic", topic, "--from-beginning", "--isolation-level",
                           "read_committed", "--max-messages", str(count), "--timeout-ms", "20000",
                           check=False).stdout
    return sorted(line for line in out.splitlines() if line)


def producer(bootstrap: str, txn_id: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})


def test_commit_abort_offsets_and_an_end_from_another_process(broker, topic_name):
    broker.create_topic(topic_name, partitions=3)
    txn_id = f"txn-{uuid.uuid4().hex[:8]}"
    with producer(broker.bootstrap, txn_id) as p:
        p.init_transactions()
        p.begin_transaction()
        for i in range(30):
            p.send(topic_name, f"committed-{i}".encode(), key=str(i).encode())
        p.send_offsets_to_transaction({TopicPartition(topic_name, 0): (7, "m")}, txn_id)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(20):
            p.send(topic_name, f"aborted-{i}".encode(), key=str(i).encode())
        p.send_offsets_to_transaction({TopicPartition(topic_name, 0): (99, "x")}, txn_id)
        p.abort_transaction()
        p.begin_transaction()
        for i in range(10):
            p.send(topic_name, f"handed-over-{i}".encode(), key=str(i).encode())
        handle = p.flush_transaction()
    # The records are in the log but invisible until another process commits the transaction.
    assert all(v.startswith("committed") for v in committed_values(broker.bootstrap, topic_name, settled=False))
    with Cluster({"bootstrap.servers": broker.bootstrap}) as cluster:
        end_transaction(cluster, handle, commit=True)
        end_transaction(cluster, handle, commit=True)  # a repeated end is harmless
    expected = sorted([f"committed-{i}" for i in range(30)] + [f"handed-over-{i}" for i in range(10)])
    assert committed_values(broker.bootstrap, topic_name) == expected
    assert java_committed_values(broker, topic_name, len(expected)) == expected
    with KafkaClient({"bootstrap.servers": broker.bootstrap}) as client:
        (offset,) = client.groups.committed(txn_id, [TopicPartition(topic_name, 0)]).values()
    assert (offset.offset, offset.metadata) == (7, "m")


def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    txn_id = f"txn-{uuid.uuid4().hex[:8]}"
    old = producer(broker.bootstrap, txn_id)
    old.init_transactions()
    old.begin_transaction()
    old.send(topic_name, b"zombie")
    zombie = old.flush_transaction()
    with producer(broker.bootstrap, txn_id) as new:
        assert new.init_transactions().producer_epoch > zombie.producer_epoch
        new.begin_transaction()
        new.send(topic_name, b"survivor")
        new.commit_transaction()
    with pytest.raises(TransactionFencedError, match=txn_id):
        old.send(topic_name, b"late").get(30)
    old.close()
    with Cluster({"bootstrap.servers": broker.bootstrap}) as cluster, pytest.raises(TransactionFencedError):
        end_transaction(cluster, zombie, commit=True)
    assert committed_values(broker.bootstrap, topic_name) == ["survivor"]


def test_many_transactions_end_at_once_and_a_fenced_one_fails_alone(broker, topic_name):
    broker.create_topic(topic_name, partitions=2)
    handles = []
    for name in ("first", "zombie", "third", "aborted-a", "aborted-b"):
        p = producer(broker.bootstrap, f"txn-{name}-{uuid.uuid4().hex[:8]}")
        p.init_transactions()
        p.begin_transaction()
        p.send(topic_name, name.encode(), key=name.encode())
        handles.append(p.flush_transaction())
        p.close()
    with producer(broker.bootstrap, handles[1].transactional_id) as new:  # fences the zombie
        new.init_transactions()
    with Cluster({"bootstrap.servers": broker.bootstrap}) as cluster:
        outcomes = end_transactions(cluster, handles[:3], commit=True)
        assert outcomes[0] is None and outcomes[2] is None
        assert isinstance(outcomes[1], TransactionFencedError)
        assert end_transactions(cluster, handles[3:], commit=False) == [None, None]
        assert end_transactions(cluster, handles[:1], commit=True) == [None]  # a repeated end is harmless
    assert committed_values(broker.bootstrap, topic_name) == ["first", "third"]


def test_misuse_is_a_typed_error(kafka, topic_name):
    with producer(kafka.bootstrap, f"txn-{uuid.uuid4().hex[:8]}") as p:
        with pytest.raises(TransactionError, match="init_transactions"):
            p.begin_transaction()
        p.init_transactions()
        with pytest.raises(TransactionError, match="begin_transaction"):
            p.send(topic_name, b"outside")
        with pytest.raises(TransactionError, match="no transaction is open"):
            p.commit_transaction()
