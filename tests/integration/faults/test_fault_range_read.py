"""The client's range read through the fault proxy: every fault ends in exact rows (offsets [0, n) once
each) or, when the fault never stops, a typed error within the configured timeouts."""

from __future__ import annotations

import time

import pytest
from fault_support import BUDGET, FAST, RECORDS, SEED, assert_exact, seed_topic
from harness.faults import FaultPlan, FaultyNetwork

from kafka_spark.client import KafkaClient
from kafka_spark.errors import KafkaSparkError
from kafka_spark.protocol import ApiKey

FETCH = {ApiKey.FETCH}
# A fault on a Fetch every third request (connection faults: every connection) until the budget is spent.
PLANS = {
    "reset_request": FaultPlan(("reset_request",), every=3, budget=BUDGET, api_keys=FETCH),
    "reset_response": FaultPlan(("reset_response",), every=3, budget=BUDGET, api_keys=FETCH),
    "truncate": FaultPlan(("truncate",), every=3, budget=BUDGET, api_keys=FETCH),
    "stall": FaultPlan(("stall",), every=3, budget=min(BUDGET, 2), api_keys=FETCH, stall_s=4),
    # 256 B every 20 ms: a 16 KiB response takes ~1.3 s, inside request.timeout.ms
    "drip": FaultPlan(("drip",), every=2, budget=BUDGET, api_keys=FETCH),
    # 64 B every 50 ms: ~13 s per response, so request.timeout.ms must end it (the whole response, not a byte)
    "drip_past_timeout": FaultPlan(("drip",), every=3, budget=min(BUDGET, 2), api_keys=FETCH, drip_bytes=64,
                                   drip_interval_s=0.05),
    "delay_handshake": FaultPlan(("delay_handshake",), every=1, budget=BUDGET, delay_s=0.5),
    "refuse": FaultPlan(("refuse",), every=1, budget=BUDGET),
    "random_mix": FaultPlan(("refuse", "delay_handshake", "reset_request", "reset_response", "stall", "drip",
                             "truncate"), probability=0.15, seed=SEED, budget=2 * BUDGET, stall_s=3, delay_s=0.3),
}


@pytest.fixture(scope="module")
def seeded(kafka) -> str:
    topic = f"faults-range-{int(time.time() * 1000)}"
    seed_topic(kafka, topic)
    return topic


@pytest.mark.parametrize("name", list(PLANS))
def test_range_read_under_fault_is_exact(kafka, seeded: str, name: str) -> None:
    plan = PLANS[name]
    with FaultyNetwork([kafka.bootstrap], plan) as net, KafkaClient({"bootstrap.servers": net.bootstrap,
                                                                    **FAST}) as client:
        started = time.monotonic()
        reader = client.fetch(seeded, 0, 0, RECORDS)
        table = reader.read_all()
        took = time.monotonic() - started
    print(f"{name}: {dict(plan.injected)} injected, {reader.stats.requests} requests, "
          f"{reader.stats.retries} retries, {took:.1f}s")
    assert plan.total > 0, "the plan injected nothing"
    assert_exact(table, RECORDS)
    assert took < FAST["default.api.timeout.ms"] / 1000


@pytest.mark.parametrize("kind", ["refuse", "stall", "reset_response"])
def test_endless_fault_ends_in_a_typed_error_in_time(kafka, seeded: str, kind: str) -> None:
    plan = FaultPlan((kind,), probability=1.0, api_keys=None if kind == "refuse" else FETCH, stall_s=30)
    timeout_s = 4.0
    config = {**FAST, "default.api.timeout.ms": int(timeout_s * 1000)}
    with FaultyNetwork([kafka.bootstrap], plan) as net:
        started = time.monotonic()
        with pytest.raises(KafkaSparkError) as info, KafkaClient({"bootstrap.servers": net.bootstrap,
                                                                  **config}) as client:
            client.fetch(seeded, 0, 0, RECORDS).read_all()
        took = time.monotonic() - started
    print(f"endless {kind}: {type(info.value).__name__} after {took:.1f}s: {info.value}")
    # the API timeout, plus one request timeout in flight when it expires, plus slack
    assert took < timeout_s + FAST["request.timeout.ms"] / 1000 + 3
    assert "gave up" in str(info.value) or "reachable" in str(info.value)
