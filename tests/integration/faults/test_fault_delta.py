"""The Delta batch load and the `pykafka` stream into Delta through the fault proxy: every fault ends in
exactly the produced (topic, partition, offset) rows in the table, read back with delta-rs; a run a fault
breaks fails with a typed error and the next run continues from the offsets committed in the table."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable
from fault_support import BUDGET, FAST, RECORDS, SEED, SOAK, seed_topic, value
from harness.faults import FaultPlan, FaultyNetwork

from kafka_spark.delta import load, start_stream
from kafka_spark.errors import KafkaSparkError
from kafka_spark.protocol import ApiKey
from kafka_spark.sink import LoadOptions, StreamOptions

PARTITIONS = 2
# A run broken by a fault is run again, as a scheduler would; more runs than this is a failure to make progress.
MAX_RUNS = 12
TYPED = re.compile(r"kafka_spark\.[\w.]+\.(\w+Error)")
PLANS = {
    "reset_and_truncate": lambda: FaultPlan(("reset_response", "truncate", "reset_request"), every=3,
                                            budget=2 * BUDGET, api_keys={ApiKey.FETCH, ApiKey.LIST_OFFSETS}),
    "random_mix": lambda: FaultPlan(("refuse", "delay_handshake", "stall", "drip", "reset_response", "truncate"),
                                    probability=0.1, seed=SEED, budget=3 * BUDGET, stall_s=3, delay_s=0.3),
}
# The quick run gives each reader one plan; FAULTS_SOAK runs both under both.
LOAD_PLANS = list(PLANS) if SOAK else ["random_mix"]
STREAM_PLANS = list(PLANS) if SOAK else ["reset_and_truncate"]


@pytest.fixture(scope="module")
def seeded(kafka) -> str:
    topic = f"faults-delta-{int(time.time() * 1000)}"
    seed_topic(kafka, topic, partitions=PARTITIONS)
    return topic


def client_options(bootstrap: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, **{k: str(v) for k, v in FAST.items()}}


def typed(exc: BaseException) -> str:
    """The name of our error class behind `exc` (directly, or in a Spark task's traceback); else re-raise."""
    if isinstance(exc, KafkaSparkError):
        return type(exc).__name__
    match = TYPED.search(str(exc))
    if match is None:
        raise exc
    return match.group(1)


def assert_table_exact(table: Path, topic: str) -> None:
    """Rows = distinct (topic, partition, offset) = every seeded offset, with its value, by delta-rs."""
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["topic", "partition", "offset", "value"]).to_pylist()
    keys = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)), "a record was written twice"
    assert set(keys) == {(topic, p, o) for p in range(PARTITIONS) for o in range(RECORDS)}
    assert all(bytes(r["value"]) == value(r["offset"]) for r in rows)


@pytest.mark.parametrize("name", LOAD_PLANS)
def test_delta_load_under_fault_is_exact(spark, kafka, seeded: str, tmp_path: Path, name: str) -> None:
    plan = PLANS[name]()
    table = tmp_path / "table"
    runs, errors, started = [], [], time.monotonic()
    with FaultyNetwork([kafka.bootstrap], plan) as net:
        options = LoadOptions(table=str(table), kafka=client_options(net.bootstrap), topics=[seeded],
                              sink_id="faults", max_records=RECORDS // 2)
        while len(runs) + len(errors) < MAX_RUNS:
            try:
                result = load(spark, options)
            except Exception as exc:
                errors.append(typed(exc))
                continue
            runs.append(result.status)
            if result.status == "up-to-date":
                break
    took = time.monotonic() - started
    print(f"delta load {name}: {dict(plan.injected)} injected, runs {runs}, typed errors {errors}, {took:.0f}s")
    assert plan.total > 0
    assert runs and runs[-1] == "up-to-date", f"no progress after {MAX_RUNS} runs: {errors}"
    assert_table_exact(table, seeded)


@pytest.mark.parametrize("name", STREAM_PLANS)
def test_stream_into_delta_under_fault_is_exact(spark, kafka, seeded: str, tmp_path: Path, name: str) -> None:
    plan = PLANS[name]()
    table = tmp_path / "table"
    starts, errors, started = 0, [], time.monotonic()
    with FaultyNetwork([kafka.bootstrap], plan) as net:
        options = StreamOptions(table=str(table), kafka=client_options(net.bootstrap), topics=[seeded],
                                sink_id="faults", starting="earliest", trigger="available-now",
                                max_offsets_per_trigger=RECORDS // 2)
        while starts < MAX_RUNS:
            starts += 1
            try:
                query = start_stream(spark, options)
            except Exception as exc:  # planning met a fault before the query started
                errors.append(typed(exc))
                continue
            try:
                assert query.awaitTermination(300), "the AvailableNow stream did not finish"
            except Exception as exc:
                errors.append(typed(exc))
            finally:
                query.stop()
            if query.exception() is None:
                break
            errors.append(typed(Exception(str(query.exception()))))
    took = time.monotonic() - started
    print(f"delta stream {name}: {dict(plan.injected)} injected, {starts} starts, typed errors {errors}, {took:.0f}s")
    assert plan.total > 0
    assert starts <= MAX_RUNS and query.exception() is None, errors
    assert_table_exact(table, seeded)
