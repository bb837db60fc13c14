"""Segment files of a real broker next to what DumpLogSegments and the Java producer say about them.

`snapshot` reads every `.log` / `.txnindex` of some partitions straight off the broker's disk, dumps
them all with one DumpLogSegments run, and checks the files did not change meanwhile, so the
decoder and the tool are judged on the same bytes. The other functions turn the oracles' view into
exactly what the decoder must produce.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Protocol

from dumplog import DumpedBatch, DumpedFile, DumpedRecord, TxnEntry, parse_dump
from java_producer import SentRecord, TopicSpec, produce

from kafka_spark.local.tools import KafkaTools
from kafka_spark.records import BatchInfo, Compression, scan_batches

# A .txnindex entry: version int16, producer id, first offset, last offset, last stable offset.
_TXN_ENTRY = struct.Struct(">hqqqq")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Broker(Protocol):
    """What a local Kafka server (4.x node or 3.9 broker) offers here."""

    @property
    def log_dir(self) -> Path: ...

    @property
    def tools(self) -> KafkaTools: ...

    @property
    def bootstrap(self) -> str: ...


@dataclass(frozen=True)
class Segment:
    """One `.log` file: its base offset, bytes and what DumpLogSegments printed for it."""

    base_offset: int
    data: bytes
    dump: DumpedFile


@dataclass(frozen=True)
class Partition:
    """Partition 0 of a topic: its segments in offset order; .txnindex entries as read here and as dumped."""

    topic: str
    segments: list[Segment]
    txn_index: list[TxnEntry]
    dumped_txn_index: list[TxnEntry]

    @property
    def batches(self) -> list[DumpedBatch]:
        return [b for s in self.segments for b in s.dump.batches]

    @property
    def records(self) -> list[DumpedRecord]:
        return [r for s in self.segments for r in s.dump.records]


Written = dict[str, tuple[Partition, list[SentRecord]]]
"""case -> its partition and the records the producer sent to it."""
Case = tuple[str, Partition, list[SentRecord]]
"""One parametrized case: its name, partition and records sent."""


def read_txn_index(data: bytes) -> list[TxnEntry]:
    """The entries of a `.txnindex` file."""
    if len(data) % _TXN_ENTRY.size:
        raise ValueError(f"a .txnindex of {len(data)} bytes is not a whole number of {_TXN_ENTRY.size}-byte entries")
    return [
        TxnEntry(pid, first, last, lso, version)
        for version, pid, first, last, lso in _TXN_ENTRY.iter_unpack(data)
    ]


def snapshot(node: Broker, topics: Sequence[str]) -> dict[str, Partition]:
    """Read, dump and parse partition 0 of each topic on `node`."""
    files = {
        topic: sorted(p for p in (node.log_dir / f"{topic}-0").iterdir() if p.suffix in (".log", ".txnindex"))
        for topic in topics
    }
    every = [p for paths in files.values() for p in paths]
    before = {p: p.read_bytes() for p in every}
    dumped = parse_dump(node.tools.dump_log(every))
    changed = [p.name for p in every if p.read_bytes() != before[p]]
    assert not changed, f"the broker changed {changed} while DumpLogSegments read them"
    assert sorted(dumped) == sorted(str(p) for p in every), "DumpLogSegments did not dump every file"
    partitions = {}
    for topic, paths in files.items():
        segments = [Segment(int(p.stem), before[p], dumped[str(p)]) for p in paths if p.suffix == ".log"]
        index = [e for p in paths if p.suffix == ".txnindex" for e in read_txn_index(before[p])]
        dumped_index = [e for p in paths if p.suffix == ".txnindex" for e in dumped[str(p)].txn_entries]
        partitions[topic] = Partition(topic, segments, index, dumped_index)
    return partitions


def write_and_snapshot(node: Broker, classes: Path, scenario: str, topics: dict[str, TopicSpec], work: Path) -> Written:
    """Fill `topics` (case -> topic) with one ProduceRecords run; each case's partition and records sent."""
    sent = produce(classes, node.tools.artifact_set, node.bootstrap, scenario, list(topics.values()), work)
    partitions = snapshot(node, [t.name for t in topics.values()])
    return {case: (partitions[t.name], [s for s in sent if s.topic == t.name]) for case, t in topics.items()}


def aborted_for(entries: Iterable[TxnEntry], start: int, end: int | None) -> list[tuple[int, int]]:
    """(producer id, first offset) of the aborted transactions that touch offsets [start, end).

    This is how a broker collects them for a fetch: from the transaction index of every segment,
    because a transaction aborted in a later segment may have begun in this one.
    """
    return [
        (e.producer_id, e.first_offset)
        for e in entries
        if e.last_offset >= start and (end is None or e.first_offset < end)
    ]


def aborted_by_markers(batches: Sequence[DumpedBatch]) -> tuple[list[TxnEntry], set[int]]:
    """What the control batches say: the aborted transactions and the base offsets of their batches.

    Each producer's transactional data batches belong to its next end marker; an ABORT marker
    aborts them. The entries carry the marker's offset as last offset, as a .txnindex does.
    """
    pending: dict[int, list[int]] = {}  # producer id -> base offsets of its open transaction's batches
    entries: list[TxnEntry] = []
    aborted: set[int] = set()
    for b in batches:
        assert b.producer_id is not None and b.base_offset is not None
        if b.is_control:
            (marker,) = b.records
            members = pending.pop(b.producer_id, [])
            if marker.end_txn_marker == "ABORT" and members:
                entries.append(TxnEntry(b.producer_id, members[0], b.last_offset, -1))
                aborted.update(members)
        elif b.is_transactional:
            pending.setdefault(b.producer_id, []).append(b.base_offset)
    assert not pending, f"transactions without an end marker: {sorted(pending)}"
    return entries, aborted


def _timestamp(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def expected_rows(
    topic: str, records: Iterable[DumpedRecord], sent: dict[int, SentRecord] | None, include_headers: bool
) -> list[dict[str, object]]:
    """The rows `decode_to_arrow(...).batch.to_pylist()` must give for these dumped data records.

    DumpLogSegments prints header keys only; their values come from what the producer `sent`.
    """
    rows = []
    for r in records:
        row: dict[str, object] = {
            "key": r.key, "value": r.value, "topic": topic, "partition": 0, "offset": r.offset,
            "timestamp": _timestamp(r.timestamp), "timestampType": r.timestamp_type,
        }
        if include_headers:
            headers = sent[r.offset].headers if sent is not None else ()
            assert r.header_keys in (None, tuple(k for k, _ in headers)), r
            row["headers"] = [{"key": k, "value": v} for k, v in headers] or None
        rows.append(row)
    return rows


def batch_fields(info: BatchInfo) -> dict[str, object]:
    """A decoded batch header in the terms DumpLogSegments prints."""
    fields: dict[str, object] = {
        "position": info.position, "size": info.size, "magic": info.magic,
        "codec": Compression(info.compression).name.lower(), "crc": info.crc, "timestamp_type": info.timestamp_type,
        "max_timestamp": info.max_timestamp, "last_offset": info.last_offset,
    }
    if info.magic >= 2:
        horizon = info.delete_horizon_ms
        fields.update(
            base_offset=info.base_offset, count=info.count, base_sequence=info.base_sequence,
            last_sequence=info.last_sequence, producer_id=info.producer_id, producer_epoch=info.producer_epoch,
            partition_leader_epoch=info.partition_leader_epoch, is_transactional=info.is_transactional,
            is_control=info.is_control,
            delete_horizon="OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]",
        )
    return fields


def check_batch_headers(partition: Partition) -> None:
    """Every segment's batch headers, as scanned (CRCs verified), are those DumpLogSegments printed."""
    for segment in partition.segments:
        found = scan_batches(segment.data, verify_crc=True)
        assert found.incomplete_at is None and found.end == len(segment.data)
        assert [batch_fields(b) for b in found.batches] == [dumped_batch_fields(b) for b in segment.dump.batches]


def dumped_batch_fields(b: DumpedBatch) -> dict[str, object]:
    """The same view of a batch line of DumpLogSegments."""
    assert b.valid, f"DumpLogSegments found batch at position {b.position} invalid"
    fields: dict[str, object] = {
        "position": b.position, "size": b.size, "magic": b.magic, "codec": b.codec, "crc": b.crc,
        "timestamp_type": b.timestamp_type, "max_timestamp": b.max_timestamp, "last_offset": b.last_offset,
    }
    if b.magic >= 2:
        fields.update(
            base_offset=b.base_offset, count=b.count, base_sequence=b.base_sequence, last_sequence=b.last_sequence,
            producer_id=b.producer_id, producer_epoch=b.producer_epoch,
            partition_leader_epoch=b.partition_leader_epoch, is_transactional=b.is_transactional,
            is_control=b.is_control, delete_horizon=b.delete_horizon,
        )
    return fields


def check_sent_matches_dump(partition: Partition, sent: Sequence[SentRecord], timestamps: bool) -> None:
    """The two oracles agree: every acknowledged record is dumped at its offset with its key and value."""
    data = [r for b in partition.batches if not b.is_control for r in b.records]
    assert [r.offset for r in data] == [s.offset for s in sent]
    for r, s in zip(data, sent, strict=True):
        assert (r.key, r.value) == (s.key, s.value), f"offset {r.offset}"
        if r.header_keys is not None:
            assert r.header_keys == tuple(k for k, _ in s.headers), f"offset {r.offset}"
        if timestamps:
            assert r.timestamp == s.timestamp, f"offset {r.offset}"
