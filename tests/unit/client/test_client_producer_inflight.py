"""Several Produce requests in flight per broker (``max.in.flight.requests.per.connection``), against the scripted
`SequencedBroker` (client_sequenced_broker.py). Shown here: N requests really in flight, resends in sequence order
after an error on the first of several in-flight batches (no duplicate, no reordering), a partition's first batch
going alone, an epoch bump after a batch that failed for good, N=1 keeping order without idempotence, the
reordering Java also allows without idempotence, transactions, and Java's configuration rule for idempotence with
more than 5 in flight."""

from __future__ import annotations

import pytest
from client_fake_broker import FakeBroker
from client_sequenced_broker import INVALID_RECORD, LOSE, NOT_LEADER, OUT_OF_ORDER, SequencedBroker

from kafka_spark.client import Producer
from kafka_spark.errors import BrokerError, ConfigError
from kafka_spark.protocol import ApiKey

NEVER = 600_000  # linger.ms: only full batches and flush() seal


def _producer(broker: FakeBroker, in_flight: int, idempotent: bool = True,
              transactional_id: str | None = None) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": NEVER, "batch.size": 1000,
                     "retry.backoff.ms": 50, "request.timeout.ms": 5000, "enable.idempotence": idempotent,
                     "max.in.flight.requests.per.connection": in_flight, "transactional.id": transactional_id})


def _values(partition: int, n: int) -> list[bytes | None]:
    return [b"p%d-%05d-" % (partition, i) + b"x" * 90 for i in range(n)]  # 100 B: 7 records a 1000 B batch


def _send(producer: Producer, partitions: int, n: int) -> dict[int, list[int]]:
    """`n` records to each partition in one call; after flush, each partition's acknowledged offsets."""
    values = {p: _values(p, n) for p in range(partitions)}
    sent = producer.send_many("t", [v for p in range(partitions) for v in values[p]],
                              partitions=[p for p in range(partitions) for _ in range(n)])
    producer.flush(20)
    assert sent.get(0) == partitions * n
    offsets: dict[int, list[int]] = {}
    for future in sent.futures():
        meta = future.get(0)
        offsets.setdefault(meta.partition, []).append(meta.offset)
    return offsets


def _first_sequences(broker: SequencedBroker, partition: int) -> list[int]:
    return [seq for p, _, _, seq in broker.sent if p == partition]


@pytest.mark.parametrize(("in_flight", "idempotent"), [(1, True), (1, False), (2, True), (5, True), (5, False),
                                                       (8, False)])
def test_up_to_n_produce_requests_are_unanswered_at_once(in_flight: int, idempotent: bool) -> None:
    # the broker holds every answer until no request came for QUIET_S: the producer sends all it may
    with SequencedBroker(partitions=2, hold_for=in_flight + 1) as broker, \
            _producer(broker, in_flight, idempotent) as producer:
        offsets = _send(producer, 2, 70)  # 10 batches a partition
    assert broker.max_unanswered == in_flight, "the producer did not keep exactly N requests in flight"
    for p in range(2):
        assert broker.logs[p] == _values(p, 70)
        assert offsets[p] == list(range(70))
    # one batch per partition in each request; the next batch of a partition goes in the next request
    assert all(parts == [0, 1] for kind, parts in broker.events if kind == "produce")
    assert not broker.refused
    if idempotent:
        assert _first_sequences(broker, 0) == [7 * i for i in range(10)]


def test_an_error_on_the_first_of_five_in_flight_batches_resends_them_in_sequence_order() -> None:
    # partition 0's first batch goes alone; then five are in flight and the first of them (sequence 7) is refused
    # with NOT_LEADER_OR_FOLLOWER: the four after it come back out of order
    with SequencedBroker(partitions=2, faults={(0, 0, 7): NOT_LEADER}) as broker, _producer(broker, 5) as producer:
        offsets = _send(producer, 2, 70)
    assert broker.max_unanswered == 5
    for p in range(2):
        assert broker.logs[p] == _values(p, 70), "records lost, repeated or reordered"
        assert offsets[p] == list(range(70))
    assert broker.refused == [(0, 0, 7, NOT_LEADER), *((0, 0, 7 * i, OUT_OF_ORDER) for i in range(2, 6))]
    sent = _first_sequences(broker, 0)
    assert sent[:6] == [0, 7, 14, 21, 28, 35]
    after = sent[6:]
    assert after == sorted(after) and after[:5] == [7, 14, 21, 28, 35], "resent out of sequence order"
    assert len(after) == 9, "a batch was sent more often than its one resend"
    assert _first_sequences(broker, 1) == [7 * i for i in range(10)]  # partition 1 never waited on partition 0


def test_the_first_batch_of_a_partition_goes_alone() -> None:
    # A broker with no state for the producer takes any first sequence (before Kafka 4.5, KAFKA-15591): were the
    # second batch in flight when the first is refused, it would be written first and the first never.
    with SequencedBroker(faults={(0, 0, 0): NOT_LEADER}) as broker, _producer(broker, 5) as producer:
        offsets = _send(producer, 1, 70)
    assert broker.logs[0] == _values(0, 70)
    assert offsets[0] == list(range(70))
    assert _first_sequences(broker, 0)[:3] == [0, 0, 7]
    kinds = [kind for kind, _ in broker.events]
    assert kinds[:4] == ["produce", "answer", "produce", "answer"], "a second batch went before the first's answer"
    assert broker.max_unanswered == 5


def test_a_lost_answer_with_five_in_flight_writes_each_record_once() -> None:
    # the broker appends the first of five batches in flight and drops the connection: all five are resent, in
    # order, and the first comes back as a duplicate with its original offsets
    with SequencedBroker(faults={(0, 0, 7): LOSE}) as broker, _producer(broker, 5) as producer:
        offsets = _send(producer, 1, 70)
    assert broker.connections == 3  # the bootstrap connection, the broker's, and the broker's again
    assert broker.logs[0] == _values(0, 70)
    assert offsets[0] == list(range(70))
    assert _first_sequences(broker, 0)[:11] == [0, *[7, 14, 21, 28, 35] * 2]


def test_a_batch_that_fails_for_good_bumps_the_epoch_and_the_later_ones_follow_in_order() -> None:
    with SequencedBroker(faults={(0, 0, 7): INVALID_RECORD}) as broker, _producer(broker, 5) as producer:
        values = _values(0, 70)
        sent = producer.send_many("t", values, partitions=[0] * 70)
        producer.flush(20)
        futures = sent.futures()
    with pytest.raises(BrokerError, match="INVALID_RECORD"):
        futures[7].get(0)
    assert [f.get(0).offset for f in futures[:7] + futures[14:]] == list(range(63))
    assert broker.logs[0] == values[:7] + values[14:], "the batches after the failed one were lost or reordered"
    # the gap closed with epoch 1: the later batches renumbered from 0
    after = [(epoch, seq) for _, _, epoch, seq in broker.sent[6:]]
    assert after[0] == (1, 0) and all(epoch == 1 for epoch, _ in after)


def test_one_in_flight_without_idempotence_retries_before_the_later_batches() -> None:
    with SequencedBroker(faults={(0, -1, -1): NOT_LEADER}, hold_for=1) as broker, \
            _producer(broker, 1, idempotent=False) as producer:
        offsets = _send(producer, 1, 35)
    assert broker.max_unanswered == 1
    assert broker.logs[0] == _values(0, 35)
    assert offsets[0] == list(range(35))


def test_without_idempotence_more_in_flight_may_reorder_a_retried_batch() -> None:
    # documented, as in Java: the first batch fails, the four after it in flight are written, then the retry
    with SequencedBroker(faults={(0, -1, -1): NOT_LEADER}) as broker, \
            _producer(broker, 5, idempotent=False) as producer:
        offsets = _send(producer, 1, 35)
    values = _values(0, 35)
    assert broker.logs[0] == values[7:] + values[:7]
    assert offsets[0] == list(range(28, 35)) + list(range(28))


def test_transactions_add_partitions_before_producing_and_end_after_every_answer() -> None:
    with SequencedBroker(partitions=2) as broker, _producer(broker, 5, transactional_id="tx") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        values = {p: _values(p, 70) for p in range(2)}
        producer.send_many("t", values[0] + values[1], partitions=[0] * 70 + [1] * 70)
        producer.commit_transaction()
    assert broker.max_unanswered == 5
    assert broker.logs == values
    kinds = [kind if kind != "txn" else ApiKey(detail[0]).name for kind, detail in broker.events]
    first_produce = kinds.index("produce")
    assert "ADD_PARTITIONS_TO_TXN" in kinds[:first_produce]
    added = next(d[1] for k, d in broker.events if k == "txn" and d[0] == ApiKey.ADD_PARTITIONS_TO_TXN)
    assert sorted(added["topics"][0]["partitions"]) == [0, 1]
    assert kinds[-1] == "END_TXN" and kinds.count("answer") == kinds.count("produce") == 10
    assert kinds.index("END_TXN") > max(i for i, k in enumerate(kinds) if k == "answer")


def test_partitions_join_the_transaction_once_they_have_records_before_a_batch_is_ready() -> None:
    import time

    with SequencedBroker(partitions=2) as broker, _producer(broker, 5, transactional_id="tx") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_many("t", [b"a", b"b"], partitions=[0, 1])  # far from a full batch, lingering for minutes

        def joined() -> list[dict]:
            return [d[1] for k, d in broker.events if k == "txn" and d[0] == ApiKey.ADD_PARTITIONS_TO_TXN]

        deadline = time.monotonic() + 10
        while not joined() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [sorted(p for t in j["topics"] for p in t["partitions"]) for j in joined()] == [[0, 1]]
        assert not [k for k, _ in broker.events if k == "produce"]
        producer.commit_transaction()
    assert broker.logs == {0: [b"a"], 1: [b"b"]}
    assert len(joined()) == 1  # not asked again when the batches went


def test_a_failed_transactional_batch_moves_the_later_ones_down_and_an_abort_starts_a_new_epoch() -> None:
    faults = {(0, 0, 7): INVALID_RECORD}
    with SequencedBroker(faults=faults) as broker, _producer(broker, 5, transactional_id="tx") as producer:
        first = producer.init_transactions()
        producer.begin_transaction()
        values = _values(0, 70)
        sent = producer.send_many("t", values, partitions=[0] * 70)
        with pytest.raises(Exception, match="must be aborted"):
            producer.commit_transaction()
        futures = sent.futures()
        with pytest.raises(BrokerError, match="INVALID_RECORD"):
            futures[7].get(0)
        # the batches after the failed one took its sequences and were written (the abort discards them)
        assert broker.logs[0] == values[:7] + values[14:]
        producer.abort_transaction()
        second = producer.transaction
        # InitProducerId again (a new epoch, here a new id): every partition's sequences start at 0
        assert (second.producer_id, second.producer_epoch) != (first.producer_id, first.producer_epoch)
        producer.begin_transaction()
        producer.send_many("t", values[:7], partitions=[0] * 7)
        producer.commit_transaction()
    assert broker.sent[-1][1:] == (second.producer_id, second.producer_epoch, 0)
    assert broker.logs[0][-7:] == values[:7]


def test_idempotence_allows_at_most_five_in_flight_as_java_does() -> None:
    with FakeBroker(lambda *a: None) as broker:
        base = {"bootstrap.servers": broker.bootstrap}
        with pytest.raises(ConfigError) as explicit:
            Producer({**base, "enable.idempotence": "true", "max.in.flight.requests.per.connection": 6})
        assert str(explicit.value) == ("Must set max.in.flight.requests.per.connection to at most 5 to use the "
                                       "idempotent producer.")
        with pytest.raises(ConfigError, match=r"^Cannot set a transactional\.id without also enabling idempotence\. "
                                              r"\(Idempotence is off because max\.in\.flight\.requests\.per\."
                                              r"connection is set to 6"):
            Producer({**base, "transactional.id": "tx", "max.in.flight.requests.per.connection": 6})
        for props in ({"enable.idempotence": True, "max.in.flight.requests.per.connection": 5},
                      {"transactional.id": "tx"}, {"max.in.flight.requests.per.connection": 64}):
            Producer({**base, **props}).close()
