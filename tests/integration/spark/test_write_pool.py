"""A worker's `pykafka` write tasks share one set of connections and metadata, as Spark's sink shares its cached
producer: a task that ends cleanly hands the cluster to the next, one that fails does not."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from kafka_spark.client import KafkaClient, pool
from kafka_spark.errors.codes import MessageTooLargeError
from kafka_spark.spark.sink.options import parse_sink_options
from kafka_spark.spark.sink.transactions import end_transactions, write_in_transaction
from kafka_spark.spark.sink.writer import write_at_least_once


def rows(prefix: str, count: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"key": [str(i).encode() for i in range(count)],
                                       "value": [f"{prefix}-{i}".encode() for i in range(count)]})


def values(bootstrap: str, topic: str, isolation: str = "read_uncommitted") -> list[str]:
    with KafkaClient({"bootstrap.servers": bootstrap, "isolation.level": isolation}) as client:
        tps = client.partitions(topic)
        ends = client.latest_offsets(tps)
        return sorted(v.decode() for tp in tps for b in client.fetch(topic, tp.partition, 0, ends[tp])
                      for v in b.column("value").to_pylist())


@pytest.fixture
def clusters_made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """The clusters the process pool opens from now on, in a pool of its own."""
    made: list[object] = []

    class Counted(pool.Cluster):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(pool, "Cluster", Counted)
    monkeypatch.setattr(pool, "_POOL", pool.ClusterPool())
    yield made
    pool.process_pool().close()


def test_clean_tasks_share_a_cluster_and_a_failed_one_gives_its_own_up(kafka, topic_name, clusters_made) -> None:
    kafka.create_topic(topic_name, partitions=3)
    options = parse_sink_options({"kafka.bootstrap.servers": kafka.bootstrap, "topic": topic_name})
    for task in range(3):
        assert write_at_least_once(options, iter([rows(f"t{task}", 50)])).records == 50
    assert len(clusters_made) == 1 and pool.process_pool().idle() == 1
    # A producer's topic is created on demand (as Java's producer asks): the pooled cluster asks for it too.
    created = f"{topic_name}-new"
    fresh = parse_sink_options({"kafka.bootstrap.servers": kafka.bootstrap, "topic": created})
    assert write_at_least_once(fresh, iter([rows("new", 5)])).records == 5
    assert len(clusters_made) == 1

    # A task whose delivery fails (a record over the topic's limit, which no retry helps) closes its cluster.
    kafka.create_topic(f"{topic_name}-small", partitions=1, configs={"max.message.bytes": 2000})
    small = parse_sink_options({"kafka.bootstrap.servers": kafka.bootstrap, "topic": f"{topic_name}-small"})
    with pytest.raises(MessageTooLargeError, match=r"max\.message\.bytes"):
        write_at_least_once(small, iter([pa.RecordBatch.from_pydict({"value": [b"x" * 10_000]})]))
    assert pool.process_pool().idle() == 0
    assert write_at_least_once(options, iter([rows("after", 10)])).records == 10
    assert len(clusters_made) == 2 and pool.process_pool().idle() == 1
    assert values(kafka.bootstrap, topic_name) == sorted(
        [f"t{t}-{i}" for t in range(3) for i in range(50)] + [f"after-{i}" for i in range(10)])
    assert values(kafka.bootstrap, created) == sorted(f"new-{i}" for i in range(5))


def test_exactly_once_tasks_share_a_cluster_each_with_its_own_transaction(kafka, topic_name, clusters_made) -> None:
    kafka.create_topic(topic_name, partitions=3)
    options = parse_sink_options({"kafka.bootstrap.servers": kafka.bootstrap, "topic": topic_name,
                                  "exactlyOnce": "true", "transactionalIdPrefix": f"{topic_name}-txn"})
    outcomes = [write_in_transaction(options, f"{topic_name}-txn-{task}", iter([rows(f"t{task}", 20)]))
                for task in range(3)]
    assert [o.records for o in outcomes] == [20, 20, 20]
    assert len(clusters_made) == 1 and pool.process_pool().idle() == 1
    handles = [o.transaction for o in outcomes if o.transaction is not None]
    assert len({(h.transactional_id, h.producer_id) for h in handles}) == 3
    assert values(kafka.bootstrap, topic_name, "read_committed") == []  # open until the driver ends them
    end_transactions(options, handles, commit=True)
    # EndTxn returns once the commit is logged; the partitions' markers (and so read_committed) follow shortly
    expected = sorted(f"t{t}-{i}" for t in range(3) for i in range(20))
    deadline = time.monotonic() + 30
    while (seen := values(kafka.bootstrap, topic_name, "read_committed")) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert seen == expected
