"""Proof: message format v0/v1 segments of Kafka 3.9 decode exactly as DumpLogSegments prints them.

The 3.9 broker (inter-broker protocol 2.8) converts what the Java producer sends into each topic's
`message.format.version`: 0.9.0 gives magic v0 (no timestamps, absolute inner offsets, and the
broken LZ4 frame checksum of KAFKA-3160), 0.10.2 gives magic v1 (timestamps, inner offsets relative
to the wrapper). A compressed wrapper carries the offset of its last inner message, and with
LogAppendTime its timestamp overrides the inner ones.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest
from harness.kafka39 import Kafka39Broker
from java_producer import TopicSpec
from segment_oracle import (
    Case,
    Written,
    check_batch_headers,
    check_sent_matches_dump,
    expected_rows,
    write_and_snapshot,
)

from kafka_spark.records import decode_to_arrow, iter_records, scan_batches
from kafka_spark.records.lz4frame import with_header_checksum

FORMATS = {0: "0.9.0", 1: "0.10.2"}
# case -> (magic, compression.type, topic configs)
CASES: dict[str, tuple[int, str, dict[str, str]]] = {
    f"v{magic}-{codec}": (magic, codec, {}) for magic in FORMATS for codec in ("none", "gzip", "snappy", "lz4")
}
CASES["v1-none-log-append-time"] = (1, "none", {"message.timestamp.type": "LogAppendTime"})
CASES["v1-lz4-log-append-time"] = (1, "lz4", {"message.timestamp.type": "LogAppendTime"})
# What ProduceRecords' "plain" scenario writes per topic, in four producer batches.
RECORDS = 69
BATCH_SIZES = [1, 40, 3, 25]


@pytest.fixture(scope="module")
def written(
    kafka39_legacy: Kafka39Broker, producer_classes: Path, tmp_path_factory: pytest.TempPathFactory
) -> Written:
    """Every case's partition, read and dumped after one run of the 3.9 Java producer over all topics."""
    run = uuid.uuid4().hex[:8]
    topics = {
        case: TopicSpec(f"records-{case}-{run}", codec, {"message.format.version": FORMATS[magic], **configs})
        for case, (magic, codec, configs) in CASES.items()
    }
    return write_and_snapshot(kafka39_legacy, producer_classes, "plain", topics, tmp_path_factory.mktemp("sent"))


def test_the_oracles_agree(case: Case) -> None:
    name, partition, sent = case
    magic, codec, configs = CASES[name]
    assert len(sent) == RECORDS
    check_sent_matches_dump(partition, sent, timestamps=magic == 1)
    assert {(b.magic, b.codec) for b in partition.batches} == {(magic, codec)}
    expected_type = -1 if magic == 0 else 1 if configs else 0
    assert {r.timestamp_type for r in partition.records} == {expected_type}
    if codec == "none":
        assert all(len(b.records) == 1 for b in partition.batches)
    else:
        # One wrapper per producer batch, carrying the offset of its last inner message.
        assert [len(b.records) for b in partition.batches] == BATCH_SIZES
        assert all(b.last_offset == b.records[-1].offset for b in partition.batches)


def _wrapper_values(data: bytes) -> list[bytes]:
    """The (compressed) values of the top-level messages of a v0/v1 segment."""
    values = []
    for info in scan_batches(data).batches:
        # offset, size, crc, magic, attributes, then the timestamp from v1 on
        pos = info.position + 18 + (8 if info.magic else 0)
        key_size = struct.unpack_from(">i", data, pos)[0]
        pos += 4 + max(key_size, 0)
        value_size = struct.unpack_from(">i", data, pos)[0]
        values.append(data[pos + 4 : pos + 4 + value_size])
    return values


def test_v0_lz4_frames_carry_kafka_3160s_checksum(case: Case) -> None:
    name, partition, _ = case
    magic, codec, _ = CASES[name]
    frames = [v for s in partition.segments for v in _wrapper_values(s.data)] if codec == "lz4" else []
    # The decoder must read both: v0 frames checksum the magic too (KAFKA-3160), v1 frames do not.
    assert all(with_header_checksum(f, broken=magic == 0) is f for f in frames)
    assert not any(with_header_checksum(f, broken=magic != 0) is f for f in frames)
    assert len(frames) == (len(BATCH_SIZES) if codec == "lz4" else 0)


def test_message_headers_match_dumplogsegments(case: Case) -> None:
    check_batch_headers(case[1])


def test_records_match_dumplogsegments(case: Case) -> None:
    _, partition, _ = case
    decoded = 0
    for segment in partition.segments:
        result = decode_to_arrow(segment.data, partition.topic, 0, include_headers=True)
        # Should the active segment end inside a message, the decoder and the tool must agree where.
        assert len(segment.data) - result.end == segment.dump.invalid_tail
        assert result.batch.to_pylist() == expected_rows(partition.topic, segment.dump.records, None, True)
        assert result.batches == len(segment.dump.batches)
        assert result.next_offset == segment.dump.batches[-1].last_offset + 1
        decoded += result.batch.num_rows

        every = [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in iter_records(segment.data)]
        assert every == [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in segment.dump.records]
    assert decoded == RECORDS


def test_offset_range_cuts_inside_wrappers(case: Case) -> None:
    _, partition, _ = case
    whole = b"".join(s.data for s in partition.segments)
    records = partition.records
    # Starts inside the 40-message batch and ends inside the 25-message one: two wrappers are cut.
    lo, hi = records[3].offset, records[50].offset
    result = decode_to_arrow(whole, partition.topic, 0, start_offset=lo, end_offset=hi)
    inside = [r for r in records if lo <= r.offset < hi]
    assert result.batch.to_pylist() == expected_rows(partition.topic, inside, None, False)
    assert result.skipped_out_of_range == RECORDS - len(inside)
