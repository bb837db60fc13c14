"""Proof on Kafka 3.9's files: message formats v0 and v1 (every legacy codec, LogAppendTime) and v2
(zstd) from a 3.9 broker dump alike with `kafka-spark dump-log` and the 3.9 DumpLogSegments, and
`kafka_spark.segments` reads what the broker serves."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from dump_compare import OPTION_SETS, assert_same_dump, copy_partitions, dump_files
from harness.kafka39 import Kafka39Broker
from java_producer import TopicSpec, produce

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.segments import PartitionLog

FORMATS = {0: "0.9.0", 1: "0.10.2"}
SMALL_INDEX = {"index.interval.bytes": "1", "flush.messages": "1", "segment.ms": "100"}
CASES: dict[str, dict[str, str]] = {
    f"v{magic}-{codec}": {"message.format.version": fmt, **SMALL_INDEX}
    for magic, fmt in FORMATS.items() for codec in ("none", "gzip", "snappy", "lz4")
}
# Message format v2 as a 3.9 broker writes it (the topic overrides the broker's old default).
CASES["v2-zstd"] = {"message.format.version": "2.8", **SMALL_INDEX}
CASES["v1-lz4-log-append-time"] = {"message.format.version": "0.10.2", "message.timestamp.type": "LogAppendTime",
                                   **SMALL_INDEX}


@pytest.fixture(scope="module")
def topics(kafka39_legacy: Kafka39Broker, producer_classes: Path,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    run = uuid.uuid4().hex[:8]
    specs = {case: TopicSpec(f"seg39-{case}-{run}", case.split("-")[1], configs) for case, configs in CASES.items()}
    produce(producer_classes, "kafka39", kafka39_legacy.bootstrap, "plain", list(specs.values()),
            tmp_path_factory.mktemp("sent"))
    return {case: spec.name for case, spec in specs.items()}


@pytest.fixture(scope="module")
def copies(kafka39_legacy: Kafka39Broker, topics: dict[str, str],
           tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    copied = copy_partitions(kafka39_legacy.log_dir, list(topics.values()), tmp_path_factory.mktemp("logs39"))
    return [f for d in copied.values() for f in dump_files(d)]


@pytest.mark.parametrize("flags", ["shallow", "data", "deep-skip-metadata", "data-skip-metadata",
                                   "verify-index-only"])
def test_dump_log_equals_kafka39s_tool(kafka39_legacy: Kafka39Broker, copies: list[Path], flags: str) -> None:
    out = assert_same_dump(kafka39_legacy.tools, copies, OPTION_SETS[flags])
    assert "magic: 0" in out and "magic: 1" in out and "magic: 2" in out
    if flags == "data":
        assert "NoTimestampType: -1" in out and "LogAppendTime: " in out and "crc: " in out


def test_segments_read_what_the_3_9_broker_serves(kafka39_legacy: Kafka39Broker, topics: dict[str, str]) -> None:
    with KafkaClient({"bootstrap.servers": kafka39_legacy.bootstrap}) as client:
        for case, topic in topics.items():
            with PartitionLog.open(str(kafka39_legacy.log_dir / f"{topic}-0")) as log:
                tp = TopicPartition(topic, 0)
                assert (log.log_start_offset, log.log_end_offset) == (
                    client.earliest_offsets([tp])[tp], client.latest_offsets([tp])[tp]), case
                start, end = log.log_start_offset, log.log_end_offset
                from_files = [r for b in log.read(start, end) for r in b.to_pylist()]
                served = [r for b in client.fetch(topic, 0, start, end) for r in b.to_pylist()]
                assert from_files == served and len(served) == 69, case
                lo, hi = served[2]["offset"], served[-3]["offset"]
                assert [r for b in log.read(lo, hi) for r in b.to_pylist()] == served[2:-3], case
