"""Proof: segments written by Kafka 4.1 from the Java producer decode exactly as DumpLogSegments prints them.

Each case is one topic filled by ProduceRecords (headers, null and empty keys and values, explicit
and producer-clock timestamps, then two producers' interleaved transactions that commit and abort)
with one compression.type. The topics roll segments every 100 ms, so transactions span segment
boundaries (one always does). The oracles are DumpLogSegments (records, batch headers, control
markers, .txnindex) and the producer's own acknowledgements (header values, which records it
committed).
"""

from __future__ import annotations

import uuid
from bisect import bisect_right
from pathlib import Path

import pytest
from java_producer import TopicSpec
from segment_oracle import (
    Case,
    Written,
    aborted_by_markers,
    aborted_for,
    check_batch_headers,
    check_sent_matches_dump,
    expected_rows,
    write_and_snapshot,
)

from kafka_spark.local.kafka import KafkaNode
from kafka_spark.records import decode_to_arrow, iter_records, kafka_schema

LOG_APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}
# case -> (producer's compression.type, topic configs, the codec the segments must hold)
CASES: dict[str, tuple[str, dict[str, str], str]] = {
    "none": ("none", {}, "none"),
    "gzip": ("gzip", {}, "gzip"),
    "snappy": ("snappy", {}, "snappy"),
    "lz4": ("lz4", {}, "lz4"),
    "zstd": ("zstd", {}, "zstd"),
    "none-log-append-time": ("none", LOG_APPEND_TIME, "none"),
    "zstd-log-append-time": ("zstd", LOG_APPEND_TIME, "zstd"),
    # The broker recompresses: its own batches, not the producer's, are what the segments hold.
    "lz4-recompressed-to-gzip": ("lz4", {"compression.type": "gzip"}, "gzip"),
}
# What ProduceRecords' "transactions" scenario writes per topic.
DATA_RECORDS = 92
ABORTED_RECORDS = 21
MARKERS = 5


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


@pytest.fixture(scope="module")
def written(kafka: KafkaNode, producer_classes: Path, tmp_path_factory: pytest.TempPathFactory) -> Written:
    """Every case's partition, read and dumped after one producer run over all topics."""
    run = uuid.uuid4().hex[:8]
    topics = {
        case: TopicSpec(f"records-{case}-{run}", codec, {**configs, "segment.ms": "100"})
        for case, (codec, configs, _) in CASES.items()
    }
    return write_and_snapshot(kafka, producer_classes, "transactions", topics, tmp_path_factory.mktemp("sent"))


def test_the_oracles_agree(case: Case) -> None:
    name, partition, sent = case
    assert len(sent) == DATA_RECORDS
    assert sum(s.outcome == "abort" for s in sent) == ABORTED_RECORDS
    check_sent_matches_dump(partition, sent, timestamps=True)
    markers = [r.end_txn_marker for b in partition.batches if b.is_control for r in b.records]
    assert markers.count("COMMIT") + markers.count("ABORT") == MARKERS == len(markers)
    assert {b.codec for b in partition.batches if not b.is_control} == {CASES[name][2]}
    expected_type = 1 if CASES[name][1] == LOG_APPEND_TIME else 0
    assert {r.timestamp_type for r in partition.records} == {expected_type}


def test_batch_headers_match_dumplogsegments(case: Case) -> None:
    check_batch_headers(case[1])


def test_records_match_dumplogsegments(case: Case) -> None:
    _, partition, sent = case
    by_offset = {s.offset: s for s in sent}
    decoded = 0
    for segment in partition.segments:
        data = [r for b in segment.dump.batches if not b.is_control for r in b.records]
        controls = [r for b in segment.dump.batches if b.is_control for r in b.records]
        result = decode_to_arrow(segment.data, partition.topic, 0, include_headers=True)
        # Should the active segment end inside a batch, the decoder and the tool must agree where.
        assert len(segment.data) - result.end == segment.dump.invalid_tail
        assert result.batch.schema == kafka_schema(include_headers=True)
        assert result.batch.to_pylist() == expected_rows(partition.topic, data, by_offset, include_headers=True)
        assert result.batches == len(segment.dump.batches)
        assert result.next_offset == segment.dump.batches[-1].last_offset + 1
        assert (result.skipped_control, result.skipped_aborted) == (len(controls), 0)
        decoded += result.batch.num_rows

        # The record-by-record reader, control records included (the tool prints their sizes only).
        every = list(iter_records(segment.data, include_control=True))
        assert [(r.offset, r.timestamp, r.timestamp_type, _size(r.key), _size(r.value), r.sequence) for r in every] == [
            (r.offset, r.timestamp, r.timestamp_type, r.key_size, r.value_size, r.sequence)
            for r in segment.dump.records
        ]
        markers = [(r.offset, r.control.name, r.control.coordinator_epoch) for r in every if r.control]
        assert markers == [(r.offset, r.end_txn_marker, r.coordinator_epoch) for r in controls]
    assert decoded == DATA_RECORDS


def test_offset_range_cuts_inside_batches(case: Case) -> None:
    _, partition, sent = case
    whole = b"".join(s.data for s in partition.segments)
    data = [r for b in partition.batches if not b.is_control for r in b.records]
    lo, hi = data[5].offset, data[-7].offset
    result = decode_to_arrow(whole, partition.topic, 0, start_offset=lo, end_offset=hi, include_headers=True)
    inside = [r for r in data if lo <= r.offset < hi]
    by_offset = {s.offset: s for s in sent}
    assert result.batch.to_pylist() == expected_rows(partition.topic, inside, by_offset, include_headers=True)
    assert result.skipped_out_of_range == len(data) - len(inside)


def test_read_committed_drops_aborted_and_control_records(case: Case) -> None:
    _, partition, sent = case
    entries, aborted_batches = aborted_by_markers(partition.batches)
    # The .txnindex files (read by us and by the tool) list exactly the transactions the markers abort.
    spans = [(e.producer_id, e.first_offset, e.last_offset) for e in entries]
    assert [(e.producer_id, e.first_offset, e.last_offset) for e in partition.txn_index] == spans
    assert partition.dumped_txn_index == partition.txn_index
    assert len(spans) == 2
    # ProduceRecords pauses inside the first aborted transaction, so it begins one segment before its marker.
    bases = [s.base_offset for s in partition.segments]
    assert bisect_right(bases, spans[0][1]) < bisect_right(bases, spans[0][2])

    survivors = [r for b in partition.batches if not (b.is_control or b.base_offset in aborted_batches)
                 for r in b.records]
    assert [r.offset for r in survivors] == [s.offset for s in sent if s.outcome != "abort"]
    by_offset = {s.offset: s for s in sent}
    expected = expected_rows(partition.topic, survivors, by_offset, include_headers=True)

    rows: list[dict[str, object]] = []
    skipped = 0
    for segment, next_base in zip(partition.segments, [*bases[1:], None], strict=True):
        result = decode_to_arrow(
            segment.data, partition.topic, 0, isolation="read_committed", include_headers=True,
            aborted=aborted_for(partition.txn_index, segment.base_offset, next_base),
        )
        rows += result.batch.to_pylist()
        skipped += result.skipped_aborted + result.skipped_control
    assert rows == expected
    assert skipped == ABORTED_RECORDS + MARKERS

    # One buffer for the whole partition, with the aborted list taken from the markers instead.
    whole = b"".join(s.data for s in partition.segments)
    result = decode_to_arrow(whole, partition.topic, 0, isolation="read_committed", include_headers=True,
                             aborted=[(e.producer_id, e.first_offset) for e in entries])
    assert result.batch.to_pylist() == expected
    assert (result.skipped_aborted, result.skipped_control) == (ABORTED_RECORDS, MARKERS)
    committed = list(iter_records(whole, isolation="read_committed", aborted=aborted_for(partition.txn_index, 0, None)))
    assert [r.offset for r in committed] == [r.offset for r in survivors]
