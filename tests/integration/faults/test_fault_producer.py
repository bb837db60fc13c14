"""The idempotent producer through the fault proxy: a lost Produce response is retried and the broker drops
the duplicate, so the topic holds every record exactly once; an endless fault (every connection reset or
refused) fails the futures, and a Spark write task, with a typed error naming the broker and the cause."""

from __future__ import annotations

import time

import pytest
from fault_support import BUDGET, FAST, RECORDS, SEED, direct_client
from harness.faults import FaultPlan, FaultyNetwork

from kafka_spark.client import Producer, TopicPartition
from kafka_spark.errors import KafkaSparkError
from kafka_spark.protocol import ApiKey

PRODUCE = {ApiKey.PRODUCE}
PRODUCER = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "batch.size": 4096,
            "request.timeout.ms": 2000, "delivery.timeout.ms": 30000, "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 200, "reconnect.backoff.ms": 20, "socket.connection.setup.timeout.ms": 2000}
PLANS = {
    # the broker appended the batch, the answer is lost: the retry must not append it again
    "reset_response": lambda: FaultPlan(("reset_response",), every=4, budget=BUDGET, api_keys=PRODUCE),
    "truncate": lambda: FaultPlan(("truncate",), every=4, budget=BUDGET, api_keys=PRODUCE),
    "stall": lambda: FaultPlan(("stall",), every=4, budget=min(BUDGET, 2), api_keys=PRODUCE, stall_s=4),
    "reset_request": lambda: FaultPlan(("reset_request",), every=4, budget=BUDGET, api_keys=PRODUCE),
    "random_mix": lambda: FaultPlan(("refuse", "reset_request", "reset_response", "stall", "drip", "truncate"),
                                    probability=0.2, seed=SEED, budget=2 * BUDGET, stall_s=3),
}


def produced(kafka, topic: str) -> list[bytes]:
    """Every value in the topic, read straight from the broker."""
    with direct_client(kafka) as client:
        tp = TopicPartition(topic, 0)
        end = client.latest_offsets([tp])[tp]
        table = client.fetch(topic, 0, 0, end).read_all()
    return [] if table is None else table.column("value").to_pylist()


@pytest.mark.parametrize("name", list(PLANS))
def test_idempotent_producer_under_fault_writes_each_record_once(kafka, topic_name: str, name: str) -> None:
    kafka.create_topic(topic_name, partitions=1)
    plan = PLANS[name]()
    n = RECORDS // 2
    values = [f"p-{i:06d}".encode() * 8 for i in range(n)]
    started = time.monotonic()
    with FaultyNetwork([kafka.bootstrap], plan) as net, Producer({"bootstrap.servers": net.bootstrap,
                                                                 **PRODUCER}) as producer:
        futures = [producer.send(topic_name, v, partition=0) for v in values]
        producer.flush(60)
        offsets = [f.get(0).offset for f in futures]
    took = time.monotonic() - started
    print(f"producer {name}: {dict(plan.injected)} injected, {took:.1f}s")
    assert plan.total > 0
    assert sorted(offsets) == list(range(n)), "acknowledged offsets have gaps or repeats"
    assert produced(kafka, topic_name) == values, "the topic does not hold each record exactly once, in order"


def test_endless_fault_fails_delivery_typed_in_time(kafka, topic_name: str) -> None:
    kafka.create_topic(topic_name, partitions=1)
    plan = FaultPlan(("reset_response",), probability=1.0, api_keys=PRODUCE)
    delivery_s = 4.0
    started = time.monotonic()
    with FaultyNetwork([kafka.bootstrap], plan) as net, Producer(
            {"bootstrap.servers": net.bootstrap, **PRODUCER, "delivery.timeout.ms": int(delivery_s * 1000)}) as p:
        future = p.send(topic_name, b"never", partition=0)
        with pytest.raises(KafkaSparkError) as info:
            future.get(delivery_s + 10)
    took = time.monotonic() - started
    print(f"endless producer fault: {type(info.value).__name__} after {took:.1f}s: {info.value}")
    assert took < delivery_s + FAST["request.timeout.ms"] / 1000 + 5
    # the broker may hold the record once (a lost answer), never twice
    assert produced(kafka, topic_name) in ([], [b"never"])


ENDLESS = {**PRODUCER, "delivery.timeout.ms": 4000}


# 15 s: the sender's metadata and producer-id retries must stop at delivery.timeout.ms, not at this
@pytest.mark.parametrize("api_timeout_ms", [4000, 15000])
def test_every_connection_refused_fails_typed_naming_broker_and_cause(kafka, topic_name: str,
                                                                      api_timeout_ms: int) -> None:
    """A producer with metadata and a producer id loses every broker (its proxy stops: each connection it
    holds is reset, each new one refused); the record fails within delivery.timeout.ms, naming both."""
    kafka.create_topic(topic_name, partitions=1)
    config = {**ENDLESS, "default.api.timeout.ms": api_timeout_ms}
    delivery_s = config["delivery.timeout.ms"] / 1000
    net = FaultyNetwork([kafka.bootstrap]).start()
    with Producer({"bootstrap.servers": net.bootstrap, **config}) as producer:
        producer.send(topic_name, b"warm", partition=0).get(30)
        net.stop()
        started = time.monotonic()
        future = producer.send(topic_name, b"never", partition=0)
        with pytest.raises(KafkaSparkError) as info:
            future.get(delivery_s + 90)
        took = time.monotonic() - started
    text = str(info.value)
    print(f"every connection refused: {type(info.value).__name__} after {took:.1f}s: {text}")
    assert net.bootstrap in text, "the error does not name the broker"
    assert "Connection refused" in text or "reset" in text, "the error does not name the cause"
    assert took < delivery_s + PRODUCER["request.timeout.ms"] / 1000 + 3


def test_spark_write_task_fails_typed_when_every_connection_is_refused(spark, kafka, topic_name: str) -> None:
    kafka.create_topic(topic_name, partitions=1)
    with FaultyNetwork([kafka.bootstrap], FaultPlan(("refuse",), probability=1.0)) as net:
        df = spark.createDataFrame([(b"v",)], "value binary")
        writer = df.write.format("pykafka").option("topic", topic_name).mode("append")
        for key, setting in {**ENDLESS, "default.api.timeout.ms": 4000, "bootstrap.servers": net.bootstrap}.items():
            writer = writer.option(f"kafka.{key}", str(setting))
        started = time.monotonic()
        with pytest.raises(Exception) as info:
            writer.save()
        took = time.monotonic() - started
    text = str(info.value)
    cause = next((line for line in text.splitlines() if "kafka_spark." in line and "Error" in line), text[-500:])
    print(f"spark write, every connection refused: after {took:.1f}s: {cause}")
    assert "kafka_spark." in text and "Error" in cause, "the task failure names no typed error"
    assert net.bootstrap in cause and ("reset" in cause or "refused" in cause or "closed" in cause)
    assert took < 4 + PRODUCER["request.timeout.ms"] / 1000 + 30
