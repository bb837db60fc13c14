"""Pairs of streams, `readStream.format("pykafka")` beside Spark's own `format("kafka")` on the same topic, and the
helpers of the tests that compare them (test_pykafka_stream.py, test_pykafka_stream_topics.py)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kafka_spark.client import Producer

FORMATS = ("pykafka", "kafka")


# ---- helpers -----------------------------------------------------------------------------------


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
