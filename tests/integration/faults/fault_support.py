"""Shared by the fault tests: client settings with short timeouts, seeding a topic, the exact-output check."""

from __future__ import annotations

import os

import pyarrow as pa

from kafka_spark.client import KafkaClient, Producer

# Short timeouts so a fault costs seconds; small fetches so one range read makes many requests.
FAST = {
    "request.timeout.ms": 2000, "default.api.timeout.ms": 20000, "socket.connection.setup.timeout.ms": 2000,
    "max.partition.fetch.bytes": 16384, "fetch.max.bytes": 65536, "fetch.max.wait.ms": 100,
    "retry.backoff.ms": 20, "retry.backoff.max.ms": 200, "reconnect.backoff.ms": 20,
    "reconnect.backoff.max.ms": 200,
}
# FAULTS_SOAK=1 (or tests/faults_soak.py) runs every fault with more data and more faults.
SOAK = os.environ.get("FAULTS_SOAK", "") not in ("", "0")
RECORDS = 20_000 if SOAK else 2_000
BUDGET = 30 if SOAK else 3
# FAULTS_SEED draws another random fault sequence for the plans that pick faults at random.
SEED = int(os.environ.get("FAULTS_SEED", "16"))


def value(i: int) -> bytes:
    """The value of the i-th seeded record (~100 bytes, so a 16 KiB fetch holds ~150)."""
    return f"value-{i:08d}-".encode() + b"x" * 80


def seed_topic(kafka, topic: str, n: int = RECORDS, partitions: int = 1) -> None:
    """Create `topic` and write `n` records per partition straight to the broker (no proxy)."""
    kafka.create_topic(topic, partitions=partitions)
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 20, "batch.size": 8192}) as producer:
        futures = [producer.send(topic, value(i), partition=p) for p in range(partitions) for i in range(n)]
        producer.flush(60)
    for f in futures:
        f.get(0)


def assert_exact(table: pa.Table | None, n: int, partition: int = 0) -> None:
    """Rows are exactly offsets [0, n) of `partition`, once each, in order, with the seeded values."""
    assert table is not None, "no rows"
    offsets = table.column("offset").to_pylist()
    assert len(offsets) == len(set(offsets)) == n, f"{len(offsets)} rows, {len(set(offsets))} distinct, {n} produced"
    assert offsets == list(range(n)), "gaps or reordering"
    assert set(table.column("partition").to_pylist()) == {partition}
    assert table.column("value").to_pylist() == [value(i) for i in range(n)]


def direct_client(kafka) -> KafkaClient:
    """A client that talks to the broker without the proxy (for setup and checks)."""
    return KafkaClient({"bootstrap.servers": kafka.bootstrap, **FAST})
