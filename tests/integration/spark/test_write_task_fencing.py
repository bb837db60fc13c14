"""A retried exactly-once write task fences the attempt it replaces, on a real broker: the older attempt's rows
reached the log but no read_committed reader ever sees them, and the older attempt, still running, fails with a
typed fencing error instead of committing or writing more."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pyarrow as pa

from kafka_spark.client import KafkaClient
from kafka_spark.client.errors import TransactionFencedError
from kafka_spark.spark.sink.options import SinkOptions
from kafka_spark.spark.sink.transactions import end_transactions, transactional_id, write_in_transaction


def rows(prefix: str, count: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "key": [str(i).encode() for i in range(count)],
        "value": [f"{prefix}-{i}".encode() for i in range(count)],
    })


def values(bootstrap: str, topic: str, isolation: str) -> list[str]:
    with KafkaClient({"bootstrap.servers": bootstrap, "isolation.level": isolation}) as client:
        tps = client.partitions(topic)
        ends = client.latest_offsets(tps)
        out: list[str] = []
        for tp in tps:
            for batch in client.fetch(topic, tp.partition, 0, ends[tp]):
                out += [v.decode() for v in batch.column("value").to_pylist() if v is not None]
    return sorted(out)


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_retried_task_fences_the_attempt_it_replaces(kafka, topic_name) -> None:
    kafka.create_topic(topic_name, partitions=2)
    sink = SinkOptions(kafka={"bootstrap.servers": kafka.bootstrap, "linger.ms": "0"}, topic=topic_name,
                       exactly_once=True, transactional_id_prefix=f"fence-{uuid.uuid4().hex[:8]}")
    txn_id = transactional_id(sink.transactional_id_prefix or "", 3)
    release = threading.Event()

    def first_attempt_rows() -> Iterator[pa.RecordBatch]:
        yield rows("old", 40)
        # Spark's task is lost here (an executor stalls): its transaction stays open while Spark retries it.
        release.wait(60)
        yield rows("late", 40)

    outcome: dict[str, object] = {}

    def first_attempt() -> None:
        try:
            outcome["result"] = write_in_transaction(sink, txn_id, first_attempt_rows())
        except BaseException as exc:  # the assertion below names what it was
            outcome["error"] = exc

    zombie = threading.Thread(target=first_attempt, daemon=True)
    zombie.start()
    # The first attempt's rows are in the log (uncommitted) before the retry starts.
    wait_for(lambda: len(values(kafka.bootstrap, topic_name, "read_uncommitted")) == 40)
    assert values(kafka.bootstrap, topic_name, "read_committed") == []

    retry = write_in_transaction(sink, txn_id, iter([rows("new", 25)]))
    assert retry.records == 25 and retry.transaction is not None

    release.set()
    zombie.join(60)
    assert not zombie.is_alive()
    assert "result" not in outcome, "the fenced attempt must not hand a transaction to the driver"
    error = outcome["error"]
    assert isinstance(error, TransactionFencedError), repr(error)
    assert txn_id in str(error) and "a newer producer initialised this transactional id" in str(error), str(error)

    end_transactions(sink, [retry.transaction], commit=True)
    assert values(kafka.bootstrap, topic_name, "read_committed") == sorted(f"new-{i}" for i in range(25))
    # What the fenced attempt wrote reached the log and was aborted, not lost from view by accident.
    uncommitted = values(kafka.bootstrap, topic_name, "read_uncommitted")
    assert sum(v.startswith("old-") for v in uncommitted) == 40
    assert not any(v.startswith("late-") for v in values(kafka.bootstrap, topic_name, "read_committed"))
