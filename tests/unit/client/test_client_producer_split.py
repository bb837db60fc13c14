"""A batch the broker refuses with MESSAGE_TOO_LARGE (larger than the topic's ``max.message.bytes``) is split and
sent again, as the Java producer does: every record lands once, in order per partition (with idempotence and
transactions, and with one request in flight without), the futures resolve once with the records' own offsets,
the topic's later batches are built small enough, and a record too large alone fails with MessageTooLargeError."""

from __future__ import annotations

import pytest
from client_sequenced_broker import MESSAGE_TOO_LARGE, SequencedBroker

from kafka_spark.client import Producer
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.batch_split import size_limit, split
from kafka_spark.client.producer.delivery import BATCH_OVERHEAD, QueuedBatch, SentRecords, queued_size
from kafka_spark.errors import MessageTooLargeError  # type: ignore[attr-defined]

NEVER = 600_000  # linger.ms: only full batches and flush() seal
LIMIT = 2000  # the broker's max.message.bytes: a 100 B record encodes to ~110 B, so ~17 records a batch
BATCH_SIZE = 8000  # ~60 records a batch as the producer builds them: refused until split twice


def _producer(broker: SequencedBroker, in_flight: int, idempotent: bool = True,
              transactional_id: str | None = None) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": NEVER, "batch.size": BATCH_SIZE,
                     "retry.backoff.ms": 20, "request.timeout.ms": 5000, "enable.idempotence": idempotent,
                     "max.in.flight.requests.per.connection": in_flight, "transactional.id": transactional_id})


def _values(partition: int, n: int) -> list[bytes | None]:
    return [b"p%d-%05d-" % (partition, i) + b"x" * 90 for i in range(n)]


def _send(producer: Producer, values: dict[int, list[bytes | None]]) -> SentRecords:
    parts = sorted(values)
    return producer.send_many("t", [v for p in parts for v in values[p]],
                              partitions=[p for p in parts for _ in values[p]])


def _check_landed(broker: SequencedBroker, sent: SentRecords, values: dict[int, list[bytes | None]],
                  in_order: bool = True) -> None:
    """Each record once in its partition's log (in the order sent), and its future names its offset there."""
    for p, expected in values.items():
        log = broker.logs[p]
        assert (log if in_order else sorted(log)) == expected, f"partition {p}: records lost, repeated or reordered"
    flat = [(p, v) for p in sorted(values) for v in values[p]]
    for (p, value), future in zip(flat, sent.futures(), strict=True):
        meta = future.get(0)
        assert meta.partition == p
        assert broker.logs[p][meta.offset] == value, "a future resolved with another record's offset"


def _too_large(broker: SequencedBroker) -> int:
    return sum(1 for *_, code in broker.refused if code == MESSAGE_TOO_LARGE)


@pytest.mark.parametrize(("in_flight", "idempotent"), [(5, True), (1, True), (1, False)])
def test_refused_batches_are_split_and_land_once_in_order(in_flight: int, idempotent: bool) -> None:
    values = {p: _values(p, 600) for p in range(2)}  # ~10 batches a partition as built at BATCH_SIZE
    with SequencedBroker(partitions=2, max_batch_bytes=LIMIT) as broker, \
            _producer(broker, in_flight, idempotent) as producer:
        sent = _send(producer, values)
        producer.flush(30)
        assert sent.get(0) == 1200
        assert (producer._buffered, producer._unsent) == (0, 0), "the split batches' accounting leaked"
    _check_landed(broker, sent, values)
    assert _too_large(broker) >= 2, "nothing was refused: the test does not exercise the split"
    # the halved size becomes the topic's limit: later batches are built to fit, not refused one by one
    assert _too_large(broker) < 20
    if idempotent:  # no gap closed by an epoch bump: the pieces took the refused batches' sequences
        assert {epoch for _, _, epoch, _ in broker.sent} == {0}


def test_without_idempotence_more_in_flight_lands_each_record_once() -> None:
    # as Java: the pieces of a refused batch may land after the partition's batches in flight behind it
    values = {0: _values(0, 600)}
    with SequencedBroker(max_batch_bytes=LIMIT) as broker, _producer(broker, 5, idempotent=False) as producer:
        sent = _send(producer, values)
        producer.flush(30)
    _check_landed(broker, sent, values, in_order=False)
    assert _too_large(broker) >= 2


def test_a_transaction_with_refused_batches_commits_every_record_once_in_order() -> None:
    values = {p: _values(p, 600) for p in range(2)}
    with SequencedBroker(partitions=2, max_batch_bytes=LIMIT) as broker, \
            _producer(broker, 5, transactional_id="tx") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        sent = _send(producer, values)
        producer.commit_transaction()
    _check_landed(broker, sent, values)
    assert _too_large(broker) >= 2
    assert broker.events[-1][0] == "txn"


@pytest.mark.parametrize("transactional_id", [None, "tx"])
def test_a_record_too_large_alone_fails_and_the_others_land_once_in_order(transactional_id: str | None) -> None:
    values = _values(0, 300)
    values[100] = b"big-" + b"y" * 3000  # over LIMIT even alone
    with SequencedBroker(max_batch_bytes=LIMIT) as broker, \
            _producer(broker, 5, transactional_id=transactional_id) as producer:
        if transactional_id:
            producer.init_transactions()
            producer.begin_transaction()
        sent = _send(producer, {0: values})
        if transactional_id:
            with pytest.raises(Exception, match="must be aborted"):
                producer.commit_transaction()
        else:
            producer.flush(30)
        futures = sent.futures()
        assert sent.done
        with pytest.raises(MessageTooLargeError) as failed:
            futures[100].get(0)
        with pytest.raises(MessageTooLargeError):
            sent.get(0)
    message = str(failed.value)
    assert "partition 0 of topic t" in message and "max.message.bytes" in message
    assert str(len(values[100])) in message or "batch of" in message
    others = values[:100] + values[101:]
    assert broker.logs[0] == others, "the records around the one too large were lost, repeated or reordered"
    offsets = [f.get(0).offset for f in futures[:100] + futures[101:]]
    assert offsets == list(range(299))


RECORDS = [(b"k", b"v" * n, (), 7) for n in (10, 10, 500, 10, 10, 10)]


def _batch() -> QueuedBatch:
    batch = QueuedBatch(TopicPartition("t", 0), 1.0)
    batch.records.extend(RECORDS)
    batch.size += sum(map(queued_size, RECORDS))
    batch.producer_id, batch.producer_epoch, batch.base_sequence = 9, 2, 40
    return batch


def test_split_keeps_order_and_hands_on_the_sequences() -> None:
    batch, records = _batch(), RECORDS
    limit = size_limit(batch, None)
    assert limit == BATCH_OVERHEAD + (batch.size - BATCH_OVERHEAD + 1) // 2
    assert size_limit(batch, 100) == 100
    pieces = split(batch, 200)
    assert [list(p.records) for p in pieces] == [records[:2], records[2:3], records[3:]]
    assert [p.first for p in pieces] == [0, 2, 3]
    assert [p.base_sequence for p in pieces] == [40, 42, 43]
    assert all((p.producer_id, p.producer_epoch, p.parent, p.created) == (9, 2, batch, 1.0) for p in pieces)
    assert sum(p.size - BATCH_OVERHEAD for p in pieces) == batch.size - BATCH_OVERHEAD
    # never one piece with all the records, whatever the limit
    assert [len(p.records) for p in split(_batch(), 10**9)] == [5, 1]
    # the parent resolves when its last piece does, with the first failed piece's error
    error = RuntimeError("x")
    pieces[0].resolve(base_offset=5)
    pieces[2].resolve(error=error)
    assert not batch.done.is_set()
    pieces[1].resolve(base_offset=7)
    assert batch.done.is_set() and batch.error is error
    assert batch.holding(1) == (pieces[0], 1) and batch.holding(3) == (pieces[2], 0)
