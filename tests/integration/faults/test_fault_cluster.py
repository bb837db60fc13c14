"""Broker faults on the 3-node KRaft cluster under every reader at once: kill -9 of a leader, a graceful
restart, a partition reassignment, a preferred-leader election and a follower whose disk runs full.

While a fault unfolds (and once after it), the client's range read and `spark.read.format("pykafka")` read a
seeded topic over and over, and the idempotent producer keeps writing to a second topic. Every read pass
must give exactly the seeded (topic, partition, offset) rows or a typed error within the configured
timeouts; the producer must acknowledge every record and the topic must hold each exactly once. The shared
cluster is restored (every node up, every replica in sync, preferred leaders) after each fault.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from cluster_faults import FAULTS, restore
from fault_support import FAST, RECORDS, value

from kafka_spark.client import KafkaClient, Producer, TopicPartition
from kafka_spark.errors import KafkaSparkError

PARTITIONS = 3
# A killed leader is fenced after 9 s (broker.session.timeout.ms); the API timeout outlasts that.
CLIENT = {**FAST, "default.api.timeout.ms": 40000, "request.timeout.ms": 5000}
PASS_LIMIT_S = PARTITIONS * CLIENT["default.api.timeout.ms"] / 1000 + 30
PRODUCER = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "batch.size": 4096,
            "request.timeout.ms": 5000, "delivery.timeout.ms": 120000, "default.api.timeout.ms": 60000,
            "retry.backoff.ms": 50, "retry.backoff.max.ms": 500, "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500, "socket.connection.setup.timeout.ms": 3000}
# A Python error class named in a Spark task failure (Spark wraps the worker's traceback).
TYPED = re.compile(r"kafka_spark\.[\w.]+\.(\w+Error)")


@dataclass
class Reader:
    """One reader's passes: how many overlapped the fault, how many were exact, the typed errors."""

    name: str
    passes: int = 0
    during_fault: int = 0
    exact: int = 0
    errors: list[str] = field(default_factory=list)
    longest_s: float = 0.0
    failure: BaseException | None = None

    def run(self, one_pass: Callable[[], None], fault_done: threading.Event) -> None:
        """Passes until the fault is over, then one more on the healed cluster (it must be exact)."""
        try:
            final = False
            while not final:
                final = fault_done.is_set()
                started = time.monotonic()
                try:
                    one_pass()
                    self.exact += 1
                except KafkaSparkError as exc:
                    self._typed(exc, str(exc), final)
                except Exception as exc:  # a Spark job failure: typed if it names one of our errors
                    match = TYPED.search(str(exc))
                    if match is None:
                        raise
                    self._typed(exc, f"{match.group(1)}: {str(exc)[:300]}", final)
                took = time.monotonic() - started
                self.longest_s = max(self.longest_s, took)
                self.passes += 1
                self.during_fault += not final
                assert took < PASS_LIMIT_S, f"{self.name}: a pass took {took:.0f}s"
        except BaseException as exc:  # reported by the test's thread
            self.failure = exc

    def _typed(self, exc: BaseException, text: str, final: bool) -> None:
        if final:
            raise AssertionError(f"{self.name} failed on the healed cluster: {text}") from exc
        self.errors.append(text)

    def summary(self) -> str:
        return (f"{self.name}: {self.passes} passes ({self.during_fault} during the fault), {self.exact} exact, "
                f"{len(self.errors)} typed errors, longest {self.longest_s:.1f}s")


def check_rows(keys: list[tuple[str, int, int]], values: list[bytes], topic: str) -> None:
    assert len(keys) == len(set(keys)) == PARTITIONS * RECORDS, f"{len(keys)} rows, {len(set(keys))} distinct"
    assert set(keys) == {(topic, p, o) for p in range(PARTITIONS) for o in range(RECORDS)}
    assert all(v == value(k[2]) for k, v in zip(keys, values, strict=True))


@pytest.fixture(scope="module")
def topics(kafka_cluster) -> Iterator[tuple[str, str]]:
    """(the seeded topic the readers read, the topic the producer writes), both 3 partitions, RF 3."""
    stamp = int(time.time() * 1000)
    seeded, written = f"faults-cluster-{stamp}", f"faults-cluster-produce-{stamp}"
    for topic in (seeded, written):
        kafka_cluster.create_topic(topic, partitions=PARTITIONS, replication=3,
                                         configs={"min.insync.replicas": 2})
    with Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "all", "linger.ms": 20}) as producer:
        futures = [producer.send(seeded, value(i), partition=p) for p in range(PARTITIONS) for i in range(RECORDS)]
        producer.flush(120)
    for f in futures:
        f.get(0)
    yield seeded, written
    restore(kafka_cluster, [seeded, written])


def range_pass(client: KafkaClient, topic: str) -> Callable[[], None]:
    def one_pass() -> None:
        keys, values = [], []
        for p in range(PARTITIONS):
            table = client.fetch(topic, p, 0, RECORDS).read_all()
            assert table is not None, f"partition {p}: no rows"
            keys += [(topic, p, o) for o in table.column("offset").to_pylist()]
            values += table.column("value").to_pylist()
        check_rows(keys, values, topic)
    return one_pass


def spark_pass(spark, cluster, topic: str) -> Callable[[], None]:
    def one_pass() -> None:
        reader = (spark.read.format("pykafka").option("kafka.bootstrap.servers", cluster.bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest").option("endingOffsets", "latest"))
        for key, setting in CLIENT.items():
            reader = reader.option(f"kafka.{key}", str(setting))
        rows = reader.load().select("topic", "partition", "offset", "value").collect()
        check_rows([(r["topic"], r["partition"], r["offset"]) for r in rows], [bytes(r["value"]) for r in rows],
                   topic)
    return one_pass


def produce_until(producer: Producer, topic: str, tag: str, stop: threading.Event, sent: list[bytes],
                  futures: list) -> None:
    """20 records every 50 ms, round-robin over the partitions, until `stop`."""
    i = 0
    while not stop.is_set():
        for _ in range(20):
            v = f"{tag}-{i:07d}".encode()
            futures.append(producer.send(topic, v, partition=i % PARTITIONS))
            sent.append(v)
            i += 1
        time.sleep(0.05)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_every_reader_under_a_broker_fault(spark, kafka_cluster, topics: tuple[str, str], fault: str) -> None:
    seeded, written = topics
    done, stop_producing = threading.Event(), threading.Event()
    outcome: dict[str, str | BaseException] = {}
    sent: list[bytes] = []
    futures: list = []

    def break_cluster() -> None:
        time.sleep(1.0)  # let every reader get going first
        try:
            outcome["fault"] = FAULTS[fault](kafka_cluster, [seeded, written])
        except BaseException as exc:
            outcome["fault"] = exc
        finally:
            done.set()

    started = time.monotonic()
    range_reader, spark_reader = Reader("range read"), Reader("pykafka batch")
    try:
        with KafkaClient({"bootstrap.servers": kafka_cluster.bootstrap, **CLIENT}) as client, \
                Producer({"bootstrap.servers": kafka_cluster.bootstrap, **PRODUCER}) as producer:
            threads = [
                threading.Thread(target=break_cluster, daemon=True),
                threading.Thread(target=range_reader.run, args=(range_pass(client, seeded), done), daemon=True),
                threading.Thread(target=produce_until, args=(producer, written, fault, stop_producing, sent, futures),
                                 daemon=True),
            ]
            for t in threads:
                t.start()
            spark_reader.run(spark_pass(spark, kafka_cluster, seeded), done)
            for t in (threads[0], threads[1]):
                t.join(PASS_LIMIT_S + 300)
            stop_producing.set()
            threads[2].join(30)
            producer.flush(180)
        took = time.monotonic() - started
        if isinstance(outcome.get("fault"), BaseException):
            raise outcome["fault"]
        acked, failed = [], []
        for f in futures:
            try:
                acked.append(f.get(0))
            except KafkaSparkError as exc:
                failed.append(f"{type(exc).__name__}: {exc}")
        print(f"\n{fault}: {outcome['fault']}; {took:.0f}s\n  {range_reader.summary()}\n  {spark_reader.summary()}"
              f"\n  producer: {len(sent)} sent, {len(acked)} acknowledged, {len(failed)} failed typed")
        for r in (range_reader, spark_reader):
            for e in r.errors[:3]:
                print(f"  {r.name} error: {e[:300]}")
            if r.failure is not None:
                raise r.failure
            assert r.during_fault >= 1, f"{r.name} never read while the fault was on"
        assert sent and not failed, failed[:3]
        in_topic = [v for v in written_values(kafka_cluster, written) if v.startswith(f"{fault}-".encode())]
        assert len(in_topic) == len(set(in_topic)), "the producer wrote a record twice"
        assert sorted(in_topic) == sorted(sent), f"{len(set(sent) - set(in_topic))} acknowledged records missing"
    finally:
        done.set()
        stop_producing.set()
        restore(kafka_cluster, [seeded, written])


def written_values(cluster, topic: str) -> list[bytes]:
    """Every value in `topic`, read after the fault from a fresh client."""
    with KafkaClient({"bootstrap.servers": cluster.bootstrap, **CLIENT}) as client:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        ends = client.latest_offsets(tps)
        out: list[bytes] = []
        for tp in tps:
            table = client.fetch(topic, tp.partition, 0, ends[tp]).read_all()
            out += [] if table is None else table.column("value").to_pylist()
        return out
