"""`readStream.format("pykafka")` plans the same micro-batches as Spark's own `format("kafka")`.

Every test runs both sources on the same topic in the same run, Spark's source being the oracle:
the same end offsets batch after batch (`recentProgress[i].sources[0].endOffset`), the same rows
in each batch, and the same failures. Where `reference/spark-kafka-source.md` states numbers
(KafkaMicroBatchSourceSuite's worked examples), they are asserted too.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from chispa import assert_df_equality
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.structs import TopicPartition as KpTopicPartition

from kafka_spark.client import Producer

FORMATS = ("pykafka", "kafka")


# ---- helpers -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def admin(kafka) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def producer(kafka) -> Iterator[Producer]:
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 0}) as p:
        yield p


def create(admin: KafkaAdminClient, topic: str, partitions: int) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)], wait_for_metadata=True)


def delete(admin: KafkaAdminClient, topic: str) -> None:
    admin.delete_topics([topic])
    deadline = time.monotonic() + 30
    while topic in admin.list_topics():
        assert time.monotonic() < deadline, f"{topic} was not deleted"
        time.sleep(0.2)


def send(producer: Producer, topic: str, partition: int, values: Iterable, **kwargs) -> None:
    """Write `values` (str or bytes) to one partition, in order, and wait for them."""
    for v in values:
        producer.send(topic, v.encode() if isinstance(v, str) else v, partition=partition, **kwargs)
    producer.flush()


class Batches:
    """A foreachBatch sink, run in this (the driver's) process: each batch's rows by batch id.

    `hook(batch_id)` runs after the rows are taken; `fail_at` makes that batch fail (it stays in the
    offset log uncommitted, so a restart replays it).
    """

    def __init__(self, hook: Callable[[int], None] | None = None, fail_at: int | None = None) -> None:
        self.hook, self.fail_at = hook, fail_at
        self.rows: dict[int, list[tuple]] = {}
        self.errors: list[BaseException] = []

    def __call__(self, df, batch_id: int) -> None:
        try:
            rows = df.select("topic", "partition", "offset", "value").collect()
        except Exception as e:
            # Spark's JVM error reaches the query only as text from here: keep the exception.
            self.errors.append(e)
            raise
        self.rows[batch_id] = sorted(
            (r.topic, r.partition, r.offset, None if r.value is None else bytes(r.value)) for r in rows)
        if self.hook is not None:
            self.hook(batch_id)
        if batch_id == self.fail_at:
            raise RuntimeError(f"injected failure in batch {batch_id}")

    def values(self) -> list[list[str]]:
        """Per batch (in id order) the decoded values, sorted."""
        return [sorted(r[3].decode() for r in self.rows[b]) for b in sorted(self.rows)]

    def counts(self) -> list[int]:
        return [len(self.rows[b]) for b in sorted(self.rows)]

    def all_rows(self) -> list[tuple]:
        return sorted(r for b in self.rows.values() for r in b)


class Together:
    """A hook shared by the two queries of a comparison: at the given batch ids both wait for each other,
    then one runs the action, so both have planned that batch before the action changes the topic."""

    def __init__(self, actions: dict[int, Callable[[], None]]) -> None:
        self.actions = actions
        self.barrier = threading.Barrier(2)

    def __call__(self, batch_id: int) -> None:
        if batch_id not in self.actions:
            return
        if self.barrier.wait(120) == 0:
            self.actions.pop(batch_id)()
        self.barrier.wait(120)  # and neither goes on before the action is done


class Run:
    """One source's side of a comparison: its options, checkpoint, and the queries started on it."""

    def __init__(self, spark, kafka, fmt: str, checkpoint: Path, options: dict[str, str]) -> None:
        self.spark, self.kafka, self.fmt = spark, kafka, fmt
        self.checkpoint = checkpoint
        self.options = options
        self.query = None
        self.progress: list = []
        self.conditions: set[str] = set()
        self.sink: Batches | str | None = None

    def start(self, sink: Batches | str, **trigger):
        """Start on the checkpoint; `sink` is a foreachBatch collector or a memory table's name."""
        reader = self.spark.readStream.format(self.fmt).option("kafka.bootstrap.servers", self.kafka.bootstrap)
        for k, v in self.options.items():
            reader = reader.option(k, v)
        writer = reader.load().writeStream
        writer = writer.format("memory").queryName(sink) if isinstance(sink, str) else writer.foreachBatch(sink)
        writer = writer.option("checkpointLocation", str(self.checkpoint))
        if trigger:
            writer = writer.trigger(**trigger)
        self.query = writer.start()
        self.sink = sink
        if self.fmt == "pykafka":
            # Start the Python planning workers one at a time: on a loaded 2-core machine, several
            # launched at once can miss Spark's connect-back timeout.
            deadline = time.monotonic() + 60
            while self.query.isActive and self.query.status["message"] == "Initializing sources":
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        return self

    def finish(self, timeout: float = 180) -> None:
        """Wait for an AvailableNow / Once query to end; raises its error."""
        try:
            assert self.query.awaitTermination(timeout), f"{self.fmt}: the query did not finish"
        finally:
            self.stop()

    def failure(self, timeout: float = 180) -> str:
        """Wait for the query to fail; its error message and the `KAFKA_DATA_LOSS.*` conditions in it.

        Spark's own error carries its condition on the JVM exception, not in the message: the cause
        chain is walked for it. Ours is a Python error whose message names the condition.
        """
        with pytest.raises(Exception) as info:
            self.finish(timeout)
        self.conditions = data_loss_conditions(info.value)
        for error in getattr(self.sink, "errors", ()):
            self.conditions |= data_loss_conditions(error)
        return str(info.value)

    def process_all(self) -> None:
        self.query.processAllAvailable()

    def stop(self) -> None:
        if self.query is not None:
            self.progress += executed(self.query.recentProgress)
            self.query.stop()
            self.query = None

    def ends(self) -> list[dict]:
        """End offsets of every batch executed so far, over restarts (idle triggers left out)."""
        return [json.loads(p.sources[0].endOffset) for p in self.progress]


def data_loss_conditions(error: BaseException) -> set[str]:
    """The `KAFKA_DATA_LOSS.*` conditions of an error: in its message (ours), or on a JVM exception
    of its cause chain (Spark's, whose message leaves the condition out)."""
    found = set(re.findall(r"KAFKA_DATA_LOSS\.[A-Z_]+", str(error)))
    java = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while java is not None:
        try:
            condition = java.getCondition()  # only a SparkThrowable has it
        except Exception:  # py4j's "no such method"
            condition = None
        if condition and condition.startswith("KAFKA_DATA_LOSS."):
            found.add(condition)
        java = java.getCause()
    return found


def executed(progress: list) -> list:
    """Progress of the triggers that ran a batch (idle triggers report progress too)."""
    return [p for p in progress if "addBatch" in p.durationMs]


@pytest.fixture
def runs(spark, kafka, tmp_path) -> Iterator[Callable[..., tuple[Run, Run]]]:
    """`runs(**options)` makes (ours, theirs) with fresh checkpoints; every query is stopped at the end."""
    made: list[Run] = []

    def make(**options: str) -> tuple[Run, Run]:
        pair = tuple(Run(spark, kafka, fmt, tmp_path / f"{fmt}-{len(made)}", dict(options)) for fmt in FORMATS)
        made.extend(pair)
        return pair  # type: ignore[return-value]

    yield make
    for run in made:
        if run.query is not None:
            with contextlib.suppress(Exception):  # a failed query may refuse; the test reported it
                run.query.stop()


def start(pairs: Iterable[tuple[Run, Run]], sinks: Iterable[tuple], **trigger) -> None:
    for pair, pair_sinks in zip(pairs, sinks, strict=True):
        for run, sink in zip(pair, pair_sinks, strict=True):
            run.start(sink, **trigger)


def each(fn: Callable[[Run], object], *pairs: tuple[Run, Run]) -> list:
    return [fn(run) for pair in pairs for run in pair]


def taken(ends: list[dict], topic: str) -> list[dict[int, int]]:
    """Offsets each batch took, per partition (the first batch counted from 0)."""
    out, prev = [], {}
    for end in ends:
        cur = {int(p): o for p, o in end[topic].items()}
        out.append({p: o - prev.get(p, 0) for p, o in cur.items()})
        prev = cur
    return out


def trigger_times(run: Run) -> list[float]:
    """Start time (s) of each executed trigger."""
    return [datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp() for p in run.progress]


def offsets(topic: str, **by_partition: int) -> str:
    return json.dumps({topic: {p[1:]: o for p, o in by_partition.items()}})


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
