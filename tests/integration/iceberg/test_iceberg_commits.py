"""The Iceberg commit protocol against racing writers, through pyiceberg alone (no Spark, no Kafka): pyiceberg's
writer, and the direct writer's files (written here as its tasks write them) committed by its driver side."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.iceberg import committed_positions
from kafka_spark.iceberg.batch_append import append_batch, create_table
from kafka_spark.iceberg.data_files import file_spec, write_data_files
from kafka_spark.iceberg.direct_append import commit_files
from kafka_spark.iceberg.position import IcebergLocation, logged_batch
from kafka_spark.sink import BatchAlreadyCommittedError, SinkCommit


def rows(topic: str, start: int, n: int) -> pa.Table:
    return pa.table({"topic": pa.array([topic] * n, pa.string()), "partition": pa.array([0] * n, pa.int32()),
                     "offset": pa.array(range(start, start + n), pa.int64())})


def append_direct(location: IcebergLocation, batch: pa.Table, commit: SinkCommit) -> None:
    """The direct writer's way: the files written first (as a task writes them), then committed."""
    spec = file_spec(location.load(), batch.schema)
    files = [row for out in write_data_files(batch.to_batches(), spec) for row in out.to_pylist()]
    commit_files(location, files, spec, commit)


WRITERS = {"pyiceberg": append_batch, "direct": append_direct}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_racing_runs_of_one_batch_commit_it_once(catalog, writer):
    append = WRITERS[writer]
    location = IcebergLocation(catalog, ("db", "raced"))
    create_table(location, rows("t", 0, 0).schema)
    tp = TopicPartition("t", 0)
    runs = 4
    barrier = threading.Barrier(runs)

    def run(i: int) -> str:
        barrier.wait()
        try:
            append(location, rows("t", 0, 3), SinkCommit("s", 0, {tp: 3}, run_id=f"run-{i}"))
            return "committed"
        except BatchAlreadyCommittedError:
            return "already committed"

    with ThreadPoolExecutor(runs) as pool:
        outcomes = sorted(pool.map(run, range(runs)))
    assert outcomes == ["already committed"] * (runs - 1) + ["committed"]
    table = location.load()
    assert table.scan().to_arrow().num_rows == 3
    assert len(table.snapshots()) == 1


@pytest.mark.parametrize("writer", list(WRITERS))
def test_racing_sinks_each_commit_every_batch_once(catalog, writer):
    append = WRITERS[writer]
    location = IcebergLocation(catalog, ("db", "shared"))
    create_table(location, rows("t", 0, 0).schema)
    sinks, batches = 4, 3

    def sink(i: int) -> None:
        topic = f"t{i}"
        for batch in range(batches):
            commit = SinkCommit(f"sink-{i}", batch, {TopicPartition(topic, 0): 5 * (batch + 1)}, run_id=f"r{i}")
            append(location, rows(topic, 5 * batch, 5), commit)

    with ThreadPoolExecutor(sinks) as pool:
        list(pool.map(sink, range(sinks)))
    table = location.load()
    scanned = sorted((r["topic"], r["offset"]) for r in table.scan().to_arrow().to_pylist())
    assert scanned == sorted((f"t{i}", o) for i in range(sinks) for o in range(5 * batches))
    positions = committed_positions("db.shared", catalog)
    assert {s: p.batch for s, p in positions.items()} == {f"sink-{i}": batches - 1 for i in range(sinks)}
    assert all(logged_batch(table, f"sink-{i}", b) is not None for i in range(sinks) for b in range(batches))
