"""`readStream.format("pykafka")` plans the same micro-batches as Spark's own `format("kafka")`.

Every test runs both sources on the same topic in the same run, Spark's source being the oracle:
the same end offsets batch after batch (`recentProgress[i].sources[0].endOffset`), the same rows
in each batch, and the same failures. Where `reference/spark-kafka-source.md` states numbers
(KafkaMicroBatchSourceSuite's worked examples), they are asserted too.
"""

from __future__ import annotations

import time

from chispa import assert_df_equality
from stream_pairs import (
    Batches,
    Run,
    Together,
    create,
    each,
    executed,
    offsets,
    send,
    start,
    taken,
    trigger_times,
)

# ---- 1. maxOffsetsPerTrigger -------------------------------------------------------------------


def test_max_offsets_per_trigger_divides_like_spark_and_continues_after_restart(runs, admin, producer,
                                                                                 topic_name):
    # KafkaMicroBatchSourceSuite "maxOffsetsPerTrigger": p0 holds 100..200, p1 10..20, p2 "1"; limit 10.
    create(admin, topic_name, 3)
    send(producer, topic_name, 0, map(str, range(100, 201)))
    send(producer, topic_name, 1, map(str, range(10, 21)))
    send(producer, topic_name, 2, ["1"])
    pair = runs(subscribe=topic_name, startingOffsets="earliest", maxOffsetsPerTrigger="10")
    ours, theirs = pair
    # Run 1 ends with batch 2 failed: logged in the offset log, not committed, like a query
    # stopped after two batches.
    first = (Batches(fail_at=2), Batches(fail_at=2))
    start([pair], [first])
    for message in each(Run.failure, pair):
        assert "injected failure in batch 2" in message
    assert first[0].rows == first[1].rows
    assert first[0].values()[:2] == [sorted(["1", "10", *map(str, range(100, 108))]),
                                     sorted(["11", *map(str, range(108, 117))])]
    # More data while stopped; the restart replays batch 2 with its logged offsets, then goes on.
    send(producer, topic_name, 0, map(str, range(201, 231)))
    second = (Batches(fail_at=4), Batches(fail_at=4))
    start([pair], [second])
    for message in each(Run.failure, pair):
        assert "injected failure in batch 4" in message

    assert ours.ends() == theirs.ends()
    assert second[0].rows == second[1].rows
    assert taken(ours.ends(), topic_name) == [
        {0: 8, 1: 1, 2: 1}, {0: 9, 1: 1, 2: 0}, {0: 9, 1: 1, 2: 0}, {0: 9, 1: 1, 2: 0}]
    assert second[0].values()[:2] == [sorted(["12", *map(str, range(117, 126))]),
                                      sorted(["13", *map(str, range(126, 135))])]


# ---- 2. / 3. Trigger.AvailableNow and Trigger.Once ---------------------------------------------


def test_available_now_applies_the_limit_to_a_snapshot_taken_at_start(runs, admin, producer, topic_name):
    create(admin, topic_name, 5)
    for p in range(5):
        send(producer, topic_name, p, [f"{p}-{i}" for i in range(3)])
    pair = runs(subscribe=topic_name, startingOffsets="earliest", maxOffsetsPerTrigger="5")
    ours, theirs = pair

    def more() -> None:
        for p in range(5):
            send(producer, topic_name, p, [f"{p}-late"])

    # Records written while batch 0 runs are after the snapshot: this run does not read them.
    hook = Together({0: more})
    first = (Batches(hook), Batches(hook))
    start([pair], [first], availableNow=True)
    each(Run.finish, pair)
    assert ours.ends() == theirs.ends() == [{topic_name: {str(p): n for p in range(5)}} for n in (1, 2, 3)]
    assert first[0].rows == first[1].rows
    assert first[0].counts() == [5, 5, 5]
    # The next AvailableNow run on the checkpoint reads them, and only them.
    second = (Batches(), Batches())
    start([pair], [second], availableNow=True)
    each(Run.finish, pair)
    assert ours.ends() == theirs.ends()
    assert second[0].values() == second[1].values() == [sorted(f"{p}-late" for p in range(5))]


def test_trigger_once_ignores_max_offsets_per_trigger(runs, admin, producer, topic_name):
    create(admin, topic_name, 3)
    send(producer, topic_name, 0, [f"a{i}" for i in range(7)])
    send(producer, topic_name, 1, [f"b{i}" for i in range(3)])
    pair = runs(subscribe=topic_name, startingOffsets="earliest", maxOffsetsPerTrigger="2")
    ours, theirs = pair
    first = (Batches(), Batches())
    start([pair], [first], once=True)
    each(Run.finish, pair)
    assert ours.ends() == theirs.ends() == [{topic_name: {"0": 7, "1": 3, "2": 0}}]
    assert first[0].rows == first[1].rows and first[0].counts() == [10]
    # Once again on the checkpoint: one batch with exactly what came since.
    send(producer, topic_name, 2, ["c0", "c1", "c2"])
    send(producer, topic_name, 0, ["a7"])
    second = (Batches(), Batches())
    start([pair], [second], once=True)
    each(Run.finish, pair)
    assert ours.ends() == theirs.ends()
    assert ours.ends()[-1] == {topic_name: {"0": 8, "1": 3, "2": 3}}
    assert second[0].values() == second[1].values() == [["a7", "c0", "c1", "c2"]]


# ---- 4. minOffsetsPerTrigger / maxTriggerDelay ---------------------------------------------------


DELAY_S = 8


def test_min_offsets_per_trigger_waits_for_data_or_the_delay(runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    send(producer, topic_name, 0, [f"a{i}" for i in range(5)])
    send(producer, topic_name, 1, [f"b{i}" for i in range(5)])
    pair = runs(subscribe=topic_name, startingOffsets="earliest", minOffsetsPerTrigger="1000",
                maxTriggerDelay=f"{DELAY_S}s")
    ours, theirs = pair
    # Batch 0 runs at once (the first trigger after a start always does). 10 records written during
    # batch 0 are below the minimum: no batch until the delay has passed. 1000 records written during
    # batch 1 reach it: the next trigger runs at once.
    hook = Together({0: lambda: send(producer, topic_name, 0, [f"x{i}" for i in range(10)]),
                     1: lambda: send(producer, topic_name, 1, [f"y{i}" for i in range(1000)])})
    sinks = (Batches(hook), Batches(hook))
    start([pair], [sinks], processingTime="200 milliseconds")
    deadline = time.monotonic() + 3 * DELAY_S + 30
    while not all(len(executed(run.query.recentProgress)) >= 3 for run in pair):
        assert time.monotonic() < deadline, [s.counts() for s in sinks]
        for run in pair:
            assert run.query.exception() is None, run.query.exception()
        time.sleep(0.2)
    each(Run.stop, pair)

    assert ours.ends() == theirs.ends()
    assert ours.ends()[:3] == [{topic_name: {"0": 5, "1": 5}}, {topic_name: {"0": 15, "1": 5}},
                               {topic_name: {"0": 15, "1": 1005}}]
    assert sinks[0].rows == sinks[1].rows
    assert sinks[0].counts()[:3] == [10, 10, 1000]
    for run in pair:
        t0, t1, t2 = trigger_times(run)[:3]
        assert t1 - t0 >= DELAY_S - 1, (run.fmt, "the 10 records did not wait for maxTriggerDelay")
        assert t2 - t1 < DELAY_S - 1, (run.fmt, "1000 records should not wait for maxTriggerDelay")


# ---- 5. starting offsets -----------------------------------------------------------------------


def test_starting_offsets_variants(runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    base = int(time.time() * 1000) - 60_000
    for i in range(5):
        producer.send(topic_name, f"a{i}".encode(), partition=0, timestamp_ms=base + i * 10)
        producer.send(topic_name, f"b{i}".encode(), partition=1, timestamp_ms=base + 100 + i * 10)
    producer.flush()
    variants = {
        "earliest": ({"startingOffsets": "earliest"}, ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"]),
        "json": ({"startingOffsets": offsets(topic_name, p0=2, p1=-2)},
                 ["a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"]),
        "json-latest": ({"startingOffsets": offsets(topic_name, p0=-1, p1=3)}, ["b3", "b4"]),
        "by-timestamp": ({"startingOffsetsByTimestamp": offsets(topic_name, p0=base + 25, p1=base + 130)},
                         ["a3", "a4", "b3", "b4"]),
        "timestamp": ({"startingTimestamp": str(base + 35)}, ["a4", "b0", "b1", "b2", "b3", "b4"]),
    }
    pairs = {name: runs(subscribe=topic_name, **opts) for name, (opts, _) in variants.items()}
    sinks = {name: (Batches(), Batches()) for name in variants}
    start(pairs.values(), sinks.values(), availableNow=True)
    each(Run.finish, *pairs.values())
    for name, (_, expected) in variants.items():
        ours, theirs = pairs[name]
        assert ours.ends() == theirs.ends(), name
        assert ours.ends()[-1] == {topic_name: {"0": 5, "1": 5}}, name
        assert sinks[name][0].rows == sinks[name][1].rows, name
        assert [v for b in sinks[name][0].values() for v in b] == expected, name


def test_starting_offsets_latest_reads_only_new_records(runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    send(producer, topic_name, 0, ["old0", "old1"])
    send(producer, topic_name, 1, ["old2"])
    pair = runs(subscribe=topic_name, startingOffsets="latest")
    sinks = (Batches(), Batches())
    start([pair], [sinks])
    each(Run.process_all, pair)
    send(producer, topic_name, 0, ["new0", "new1", "new2"])
    send(producer, topic_name, 1, ["new3"])
    each(Run.process_all, pair)
    each(Run.stop, pair)
    assert sinks[0].all_rows() == sinks[1].all_rows()
    assert sorted(r[3] for r in sinks[0].all_rows()) == [b"new0", b"new1", b"new2", b"new3"]
    assert pair[0].ends()[-1] == pair[1].ends()[-1] == {topic_name: {"0": 5, "1": 2}}


def test_starting_offsets_json_must_name_every_partition(runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    pair = runs(subscribe=topic_name, startingOffsets=offsets(topic_name, p0=0))
    start([pair], [(Batches(), Batches())], availableNow=True)
    ours, theirs = each(Run.failure, pair)
    for message in (ours, theirs):
        assert "If startingOffsets contains specific offsets, you must specify all TopicPartitions" in message
        assert f"{topic_name}-1" in message


# ---- 6. headers --------------------------------------------------------------------------------


def test_include_headers_gives_the_same_rows(spark, runs, admin, producer, topic_name):
    create(admin, topic_name, 2)
    producer.send(topic_name, b"v0", key=b"k0", partition=0, headers=[("h1", b"x"), ("h1", b"dup"), ("h2", None)])
    producer.send(topic_name, b"v1", key=None, partition=0)
    producer.send(topic_name, None, key=b"k2", partition=1, headers=[("only", b"")])
    producer.send(topic_name, b"v3", key=b"k3", partition=1)
    producer.flush()
    pair = runs(subscribe=topic_name, startingOffsets="earliest", includeHeaders="true")
    start([pair], [("headers_ours", "headers_theirs")], availableNow=True)
    each(Run.finish, pair)
    ours, theirs = spark.table("headers_ours"), spark.table("headers_theirs")
    assert ours.schema == theirs.schema
    assert_df_equality(ours, theirs, ignore_row_order=True)
    assert ours.where("headers is null").count() == 2
    first = ours.where("offset = 0 and partition = 0").first()
    assert [(h.key, h.value) for h in first.headers] == [("h1", bytearray(b"x")), ("h1", bytearray(b"dup")),
                                                          ("h2", None)]
