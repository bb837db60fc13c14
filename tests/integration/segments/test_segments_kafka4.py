"""Proof on Kafka 4.1's own files: `kafka-spark dump-log` prints what DumpLogSegments prints, and
`kafka_spark.segments` reads what the broker serves.

One module fixture fills the topics: Kafka's Java producer writes every codec, LogAppendTime and
interleaved committed/aborted transactions (segments roll every 100 ms, so an aborted transaction
spans two segments; `index.interval.bytes=1` puts every batch in the indexes); our producer fills a
compacted topic that the log cleaner then compacts.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from broker_files import CODECS, ROLLING, fill_compacted, wait_compacted
from dump_compare import OPTION_SETS, assert_same_dump, copy_partitions, dump_files, ours
from java_producer import TopicSpec, produce

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.local.kafka import KafkaNode
from kafka_spark.segments import PartitionLog, list_partitions


@pytest.fixture(scope="module")
def topics(kafka: KafkaNode, producer_classes: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """case -> topic, all written and (the compacted one) compacted."""
    run = uuid.uuid4().hex[:8]
    specs = {codec: TopicSpec(f"seg-{codec}-{run}", codec, ROLLING) for codec in CODECS}
    append_time = {**ROLLING, "message.timestamp.type": "LogAppendTime"}
    specs["log-append-time"] = TopicSpec(f"seg-lat-{run}", "lz4", append_time)
    # The cleaner wakes every 15 s by default; a dynamic broker setting makes it look every 200 ms.
    kafka.tools.run("configs", "--entity-type", "brokers", "--entity-default", "--alter", "--add-config",
                    "log.cleaner.backoff.ms=200")
    produce(producer_classes, "kafka4", kafka.bootstrap, "transactions", list(specs.values()),
            tmp_path_factory.mktemp("sent"))
    names = {case: spec.name for case, spec in specs.items()}
    names["compacted"] = f"seg-compacted-{run}"
    fill_compacted(kafka, names["compacted"])
    wait_compacted(kafka.log_dir, names["compacted"])
    return names


@pytest.fixture(scope="module")
def copies(kafka: KafkaNode, topics: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """case -> a copy of its partition directory (stable bytes for both tools)."""
    copied = copy_partitions(kafka.log_dir, list(topics.values()), tmp_path_factory.mktemp("logs"))
    return {case: copied[topic] for case, topic in topics.items()}


@pytest.mark.parametrize("flags", list(OPTION_SETS), ids=list(OPTION_SETS))
def test_dump_log_equals_kafkas_tool(kafka: KafkaNode, copies: dict[str, Path], flags: str) -> None:
    files = [f for d in copies.values() for f in dump_files(d)]
    assert {f.suffix for f in files} >= {".log", ".index", ".timeindex", ".txnindex", ".snapshot"}
    out = assert_same_dump(kafka.tools, files, OPTION_SETS[flags])
    if flags == "data":
        for codec in ("gzip", "snappy", "lz4", "zstd"):
            assert f"compresscodec: {codec}" in out
        assert "endTxnMarker: ABORT" in out and "LogAppendTime: " in out


def test_dump_log_sanity_check_on_rolled_segments(kafka: KafkaNode, copies: dict[str, Path]) -> None:
    # A live segment's untrimmed .timeindex fails Kafka's check with a stack trace; rolled ones pass.
    files = []
    for directory in copies.values():
        logs = sorted(directory.glob("*.log"))
        files += [p for log in logs[:-1] for p in (log.with_suffix(".index"), log.with_suffix(".timeindex"))]
    assert_same_dump(kafka.tools, files, ["--index-sanity-check"])


def test_compacted_segments_dump_alike(kafka: KafkaNode, copies: dict[str, Path]) -> None:
    # The cleaner writes one index entry per chunk of several batches: both tools report the
    # entries whose key is not the first batch's last offset.
    files = dump_files(copies["compacted"])
    assert_same_dump(kafka.tools, files, ["--deep-iteration"])
    _, _, err = ours(files, ["--deep-iteration"])
    assert "Mismatches in :" in err or "Non-consecutive offsets in" in err


def _rows(batches: object) -> list[dict[str, object]]:
    return [r for b in batches for r in b.to_pylist()]  # type: ignore[attr-defined]


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_segments_read_what_the_broker_serves(kafka: KafkaNode, topics: dict[str, str], isolation: str) -> None:
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        for case, topic in topics.items():
            with PartitionLog.open(str(kafka.log_dir / f"{topic}-0")) as log:
                tp = TopicPartition(topic, 0)
                assert log.log_start_offset == client.earliest_offsets([tp])[tp], case
                assert log.log_end_offset == client.latest_offsets([tp])[tp], case
                assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
                start, end = log.log_start_offset, log.log_end_offset
                from_files = _rows(log.read(start, end, isolation=isolation, include_headers=True))
                served = _rows(client.fetch(topic, 0, start, end, isolation_level=isolation, include_headers=True))
                assert from_files == served, case
                assert from_files, case
                # A range that starts and ends inside batches, found through the indexes.
                lo, hi = served[3]["offset"], served[-4]["offset"]
                inner = _rows(log.read(lo, hi, isolation=isolation, include_headers=True))
                assert inner == [r for r in served if lo <= r["offset"] < hi], case


def test_timestamp_seeks_agree_with_the_broker(kafka: KafkaNode, topics: dict[str, str]) -> None:
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        for case, topic in topics.items():
            with PartitionLog.open(str(kafka.log_dir / f"{topic}-0")) as log:
                stamps = sorted({r["timestamp"] for r in _rows(log.read())})
                tp = TopicPartition(topic, 0)
                for ts in [stamps[0], stamps[len(stamps) // 2], stamps[-1]]:
                    ms = int(ts.timestamp() * 1000)
                    for probe in (ms - 1, ms, ms + 1):
                        expected = client.offsets_for_times({tp: probe})[tp]
                        assert log.offset_for_timestamp(probe) == expected, (case, probe)


def test_log_dir_listing_finds_every_topic(kafka: KafkaNode, topics: dict[str, str]) -> None:
    found = {(p.topic, p.partition) for p in list_partitions(str(kafka.log_dir))}
    assert {(t, 0) for t in topics.values()} <= found
    assert not any(t.startswith("__cluster_metadata") for t, _ in found)
