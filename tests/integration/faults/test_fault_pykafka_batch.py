"""`spark.read.format("pykafka")` through the fault proxy: the Spark tasks' fetches are cut and stalled,
and the DataFrame still holds every (topic, partition, offset) exactly once."""

from __future__ import annotations

import time

import pytest
from fault_support import BUDGET, FAST, RECORDS, SEED, seed_topic, value
from harness.faults import FaultPlan, FaultyNetwork

from kafka_spark.protocol import ApiKey

PARTITIONS = 2
PLANS = {
    "reset_and_truncate": lambda: FaultPlan(("reset_response", "truncate", "reset_request"), every=3,
                                            budget=2 * BUDGET, api_keys={ApiKey.FETCH}),
    "random_mix": lambda: FaultPlan(("refuse", "delay_handshake", "stall", "drip", "reset_response"),
                                    probability=0.15, seed=SEED, budget=2 * BUDGET, stall_s=3, delay_s=0.3),
}


@pytest.fixture(scope="module")
def seeded(kafka) -> str:
    topic = f"faults-spark-{int(time.time() * 1000)}"
    seed_topic(kafka, topic, partitions=PARTITIONS)
    return topic


@pytest.mark.parametrize("name", list(PLANS))
def test_pykafka_batch_under_fault_is_exact(spark, kafka, seeded: str, name: str) -> None:
    plan = PLANS[name]()
    with FaultyNetwork([kafka.bootstrap], plan) as net:
        reader = (spark.read.format("pykafka").option("kafka.bootstrap.servers", net.bootstrap)
                  .option("subscribe", seeded).option("startingOffsets", "earliest")
                  .option("endingOffsets", "latest"))
        for key, setting in FAST.items():
            reader = reader.option(f"kafka.{key}", str(setting))
        started = time.monotonic()
        rows = reader.load().select("topic", "partition", "offset", "value").collect()
        took = time.monotonic() - started
    print(f"pykafka {name}: {dict(plan.injected)} injected, {len(rows)} rows in {took:.1f}s")
    assert plan.total > 0
    keys = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)) == PARTITIONS * RECORDS
    assert set(keys) == {(seeded, p, o) for p in range(PARTITIONS) for o in range(RECORDS)}
    assert all(bytes(r["value"]) == value(r["offset"]) for r in rows)
