"""`readStream.format("pykafka")` plans the same micro-batches as Spark's own `format("kafka")` when topics change
under it: transactions, added partitions, new and deleted topics, deleted and replayed records. Spark's source is
the oracle, run beside ours on the same topic, as in test_pykafka_stream.py."""

from __future__ import annotations

from kafka import KafkaProducer
from kafka.admin import NewPartitions
from kafka.structs import TopicPartition as KpTopicPartition
from stream_pairs import (
    Batches,
    Run,
    create,
    delete,
    each,
    offsets,
    send,
    start,
)

# ---- 7. read_committed -------------------------------------------------------------------------


def test_read_committed_stops_at_open_transactions_and_skips_aborted_ones(runs, kafka, admin, topic_name):
    create(admin, topic_name, 2)
    txn = KafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id=f"{topic_name}-txn")
    try:
        txn.init_transactions()

        def transaction(records: list[tuple[int, str]], commit: bool | None) -> None:
            txn.begin_transaction()
            for p, v in records:
                txn.send(topic_name, v.encode(), partition=p)
            txn.flush()
            if commit:
                txn.commit_transaction()
            elif commit is False:
                txn.abort_transaction()

        transaction([(0, "c0"), (0, "c1"), (0, "c2"), (1, "c3"), (1, "c4")], commit=True)
        transaction([(0, "x0"), (0, "x1"), (0, "x2"), (0, "x3"), (1, "x4")], commit=False)
        transaction([(0, "c5"), (0, "c6")], commit=True)
        transaction([(0, "o0"), (1, "o1")], commit=None)  # left open
        # Offsets count markers and aborted records: p0 = 3+1 + 4+1 + 2+1, then the open one at 12.
        pair = runs(subscribe=topic_name, startingOffsets="earliest", maxOffsetsPerTrigger="4",
                    **{"kafka.isolation.level": "read_committed", "kafkaConsumer.pollTimeoutMs": "10000"})
        ours, theirs = pair
        first = (Batches(), Batches())
        start([pair], [first], availableNow=True)
        each(Run.finish, pair)
        assert ours.ends() == theirs.ends()
        assert ours.ends()[-1] == {topic_name: {"0": 12, "1": 5}}
        assert first[0].rows == first[1].rows
        assert sorted(v for b in first[0].values() for v in b) == ["c0", "c1", "c2", "c3", "c4", "c5", "c6"]
        # Once committed, the open transaction is read by the next run on the checkpoint.
        txn.commit_transaction()
        second = (Batches(), Batches())
        start([pair], [second], availableNow=True)
        each(Run.finish, pair)
        assert ours.ends() == theirs.ends()
        assert ours.ends()[-1] == {topic_name: {"0": 14, "1": 7}}
        assert second[0].all_rows() == second[1].all_rows()
        assert sorted(v for b in second[0].values() for v in b) == ["o0", "o1"]
    finally:
        txn.close()


# ---- 8. topology changes under a running query -------------------------------------------------


def test_added_partitions_are_read_from_earliest(runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    send(producer, topic_name, 0, ["old0"])
    pair = runs(subscribe=topic_name, startingOffsets="latest")
    sinks = (Batches(), Batches())
    start([pair], [sinks])
    each(Run.process_all, pair)
    send(producer, topic_name, 1, ["new1"])
    each(Run.process_all, pair)
    admin.create_partitions({topic_name: NewPartitions(4)})
    producer.cluster.refresh_metadata([topic_name])
    send(producer, topic_name, 2, ["p2-0", "p2-1"])
    send(producer, topic_name, 3, ["p3-0"])
    send(producer, topic_name, 0, ["new0"])
    each(Run.process_all, pair)
    each(Run.stop, pair)
    assert sinks[0].all_rows() == sinks[1].all_rows()
    assert [(r[1], r[2], r[3]) for r in sinks[0].all_rows()] == [
        (0, 1, b"new0"), (1, 0, b"new1"), (2, 0, b"p2-0"), (2, 1, b"p2-1"), (3, 0, b"p3-0")]
    assert pair[0].ends()[-1] == pair[1].ends()[-1] == {topic_name: {"0": 2, "1": 1, "2": 2, "3": 1}}


def test_new_and_deleted_topics_under_running_queries(runs, admin, producer, topic_name):
    # Two patterns: over a deleted topic the first one's queries go on, the second one's fail. A third
    # pair subscribes to a topic by name: once it is deleted both fail, even with failOnDataLoss=false.
    names = {k: f"{topic_name}-{k}" for k in ("a", "b", "c", "d", "e")}
    for k in ("a", "c", "e"):
        create(admin, names[k], 1)
        send(producer, names[k], 0, [f"{k}-old"])
    lenient = runs(subscribePattern=f"{topic_name}-[ab]", startingOffsets="latest", failOnDataLoss="false")
    strict = runs(subscribePattern=f"{topic_name}-[cd]", startingOffsets="latest")
    named = runs(subscribe=names["e"], startingOffsets="earliest", failOnDataLoss="false")
    sinks = ((Batches(), Batches()), (Batches(), Batches()), (Batches(), Batches()))
    start([lenient, strict, named], sinks)
    each(Run.process_all, lenient, strict, named)
    # New matching topics are read from their earliest offset, whatever startingOffsets says.
    for k, other in (("b", "a"), ("d", "c")):
        create(admin, names[k], 2)
        send(producer, names[k], 0, [f"{k}0-0", f"{k}0-1"])
        send(producer, names[k], 1, [f"{k}1-0"])
        send(producer, names[other], 0, [f"{other}-new"])
    each(Run.process_all, lenient, strict)
    for pair_sinks, (k, other) in zip(sinks, (("b", "a"), ("d", "c")), strict=False):
        assert pair_sinks[0].all_rows() == pair_sinks[1].all_rows()
        assert [(r[0], r[1], r[2], r[3]) for r in pair_sinks[0].all_rows()] == [
            (names[other], 0, 1, f"{other}-new".encode()), (names[k], 0, 0, f"{k}0-0".encode()),
            (names[k], 0, 1, f"{k}0-1".encode()), (names[k], 1, 0, f"{k}1-0".encode())]
    # Deleted topics: failOnDataLoss=false goes on, true fails with KAFKA_DATA_LOSS.PARTITIONS_DELETED.
    for k in ("b", "d", "e"):
        delete(admin, names[k])
    send(producer, names["a"], 0, ["a-after"])
    send(producer, names["c"], 0, ["c-after"])
    each(Run.process_all, lenient)
    each(Run.stop, lenient)
    assert sinks[0][0].all_rows() == sinks[0][1].all_rows()
    assert (names["a"], 0, 2, b"a-after") in sinks[0][0].all_rows()
    assert lenient[0].ends()[-1] == lenient[1].ends()[-1] == {names["a"]: {"0": 3}}
    for run, message in zip(strict, each(Run.failure, strict), strict=True):
        assert run.conditions == {"KAFKA_DATA_LOSS.PARTITIONS_DELETED"}, (run.fmt, message)
        assert f"{names['d']}-0" in message and f"{names['d']}-1" in message
    for pair_sinks in sinks[1]:
        assert (names["c"], 0, 2, b"c-after") not in pair_sinks.all_rows()
    # Spark's source cannot describe a subscribed topic that is gone: not data loss, an error.
    ours, theirs = each(Run.failure, named)
    assert "does not exist" in ours and names["e"] in ours
    assert "UnknownTopicOrPartition" in theirs
    assert named[0].ends() == named[1].ends() == [{names["e"]: {"0": 1}}]


def test_records_deleted_before_they_are_read(runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    send(producer, topic_name, 0, [f"a{i}" for i in range(10)])
    send(producer, topic_name, 1, ["b0"])
    lenient = runs(subscribe=topic_name, startingOffsets="earliest", failOnDataLoss="false")
    strict = runs(subscribe=topic_name, startingOffsets="earliest")
    start([lenient, strict], [(Batches(), Batches()), (Batches(), Batches())], availableNow=True)
    each(Run.finish, lenient, strict)
    # While the queries are down, 10 more records arrive and the first 5 of them are deleted.
    send(producer, topic_name, 0, [f"a{i}" for i in range(10, 20)])
    send(producer, topic_name, 1, ["b1"])
    admin.delete_records({KpTopicPartition(topic_name, 0): 15})
    sinks = ((Batches(), Batches()), (Batches(), Batches()))
    start([lenient, strict], sinks, availableNow=True)
    each(Run.finish, lenient)
    assert lenient[0].ends() == lenient[1].ends()
    assert lenient[0].ends()[-1] == {topic_name: {"0": 20, "1": 2}}
    assert sinks[0][0].rows == sinks[0][1].rows
    assert sorted(v for b in sinks[0][0].values() for v in b) == ["a15", "a16", "a17", "a18", "a19", "b1"]
    for run, message in zip(strict, each(Run.failure, strict), strict=True):
        assert run.conditions == {"KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"}, (run.fmt, message)
        assert f"Could not read records in offset [10, 20) for topic partition {topic_name}-0" in message


# ---- 9. batch 0 replayed after a restart ---------------------------------------------------------


def test_batch_zero_replays_the_same_range_after_a_restart(runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    send(producer, topic_name, 0, ["a0", "a1"])
    send(producer, topic_name, 1, ["b0", "b1", "b2"])
    # Batch 0 fails (logged, not committed); data arrives; the restart replays batch 0 first.
    latest = runs(subscribe=topic_name, startingOffsets="latest")
    mixed = runs(subscribe=topic_name, startingOffsets=offsets(topic_name, p0=-1, p1=-2))
    first = ((Batches(fail_at=0), Batches(fail_at=0)), (Batches(fail_at=0), Batches(fail_at=0)))
    start([latest, mixed], first)
    for message in each(Run.failure, latest, mixed):
        assert "injected failure in batch 0" in message
    send(producer, topic_name, 0, ["a2", "a3"])
    send(producer, topic_name, 1, ["b3"])
    second = ((Batches(), Batches()), (Batches(), Batches()))
    start([latest, mixed], second, availableNow=True)
    each(Run.finish, latest, mixed)
    for pair, before, after in zip((latest, mixed), first, second, strict=True):
        assert pair[0].ends() == pair[1].ends()
        assert before[0].rows == before[1].rows
        assert after[0].rows == after[1].rows
        # The replayed batch 0 reads what the failed batch 0 read.
        assert after[0].rows[0] == before[0].rows[0]
    assert latest[0].ends() == [{topic_name: {"0": 2, "1": 3}}, {topic_name: {"0": 4, "1": 4}}]
    assert second[0][0].values() == [[], ["a2", "a3", "b3"]]
    assert second[1][0].values() == [["b0", "b1", "b2"], ["a2", "a3", "b3"]]


# ---- 10. a topic deleted and created again under a stream's checkpoint ---------------------------


def test_a_recreated_topic_moves_offsets_backwards(runs, admin, producer, topic_name):
    create(admin, topic_name, 1)
    send(producer, topic_name, 0, [f"old{i}" for i in range(5)])
    lenient = runs(subscribe=topic_name, startingOffsets="earliest", failOnDataLoss="false")
    strict = runs(subscribe=topic_name, startingOffsets="earliest")
    start([lenient, strict], [(Batches(), Batches()), (Batches(), Batches())], availableNow=True)
    each(Run.finish, lenient, strict)
    # While the queries are down the topic is deleted and created again, with fewer records.
    delete(admin, topic_name)
    create(admin, topic_name, 1)
    send(producer, topic_name, 0, ["new0", "new1"])
    sinks = ((Batches(), Batches()), (Batches(), Batches()))
    start([lenient, strict], sinks, availableNow=True)
    for run, message in zip(strict, each(Run.failure, strict), strict=True):
        assert run.conditions == {"KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED"}, (run.fmt, message)
        assert f"Reason: Partition {topic_name}-0 offset was changed from 5 to 2." in message
    each(Run.finish, lenient)
    # failOnDataLoss=false skips the rewound range; the next batch starts at the new, lower offset,
    # so the records below the old offset are never read (Spark's documented behaviour).
    send(producer, topic_name, 0, ["new2", "new3"])
    later = (Batches(), Batches())
    start([lenient], [later], availableNow=True)
    each(Run.finish, lenient)
    assert lenient[0].ends() == lenient[1].ends()
    assert [e[topic_name] for e in lenient[0].ends()] == [{"0": 5}, {"0": 2}, {"0": 4}]
    assert sinks[0][0].rows == sinks[0][1].rows and later[0].rows == later[1].rows
    assert [v for b in later[0].values() for v in b] == ["new2", "new3"]
