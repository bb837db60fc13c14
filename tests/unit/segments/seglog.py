"""Builds Kafka log directories in tests: batches from the project's encoder, indexes by hand."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafka_spark.records import ControlType, encode_batch, encode_control_batch
from kafka_spark.segments import segment_file_name

BASE_TIME = 1_700_000_000_000


@dataclass
class Written:
    """What a built partition holds: offset -> (key, value, headers, timestamp), and which offsets aborted."""

    records: dict[int, tuple[bytes | None, bytes | None, tuple, int]] = field(default_factory=dict)
    aborted: set[int] = field(default_factory=set)


@dataclass
class SegmentBuilder:
    """One segment's bytes and index entries, appended batch by batch like a leader does."""

    base_offset: int
    index_interval: int = 0
    data: bytearray = field(default_factory=bytearray)
    index: list[tuple[int, int]] = field(default_factory=list)
    time_index: list[tuple[int, int]] = field(default_factory=list)
    txn: list[tuple[int, int, int, int]] = field(default_factory=list)
    _since_entry: int = 0
    _max_ts: int = -1

    def append(self, batch: bytes, last_offset: int, max_ts: int) -> None:
        # Kafka's rule: an entry once more than index_interval bytes went by since the last one.
        if self._since_entry > self.index_interval:
            self.index.append((last_offset, len(self.data)))
            self._since_entry = 0
        if max_ts > self._max_ts:
            self.time_index.append((max_ts, last_offset))
            self._max_ts = max_ts
        self.data += batch
        self._since_entry += len(batch)

    def write(self, directory: Path, *, preallocate_indexes: int = 0, log_tail: bytes = b"") -> None:
        name = lambda ext: directory / segment_file_name(self.base_offset, ext)  # noqa: E731
        name(".log").write_bytes(bytes(self.data) + log_tail)
        idx = b"".join(struct.pack(">ii", o - self.base_offset, p) for o, p in self.index)
        name(".index").write_bytes(idx + b"\0" * 8 * preallocate_indexes)
        tix = b"".join(struct.pack(">qi", t, o - self.base_offset) for t, o in self.time_index)
        name(".timeindex").write_bytes(tix + b"\0" * 12 * preallocate_indexes)
        if self.txn:
            name(".txnindex").write_bytes(b"".join(struct.pack(">hqqqq", 0, *e) for e in self.txn))


class PartitionBuilder:
    """Batches in offset order, rolled into segments on demand."""

    def __init__(self, directory: Path, compression: str | None = None) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.compression = compression
        self.next_offset = 0
        self.segments = [SegmentBuilder(0)]
        self.written = Written()
        self.open_txn: dict[int, int] = {}
        self.txn_offsets: dict[int, list[int]] = {}

    def roll(self) -> None:
        self.segments.append(SegmentBuilder(self.next_offset))

    def batch(self, n: int, *, producer_id: int = -1, transactional: bool = False, gap: int = 0,
              headers: Sequence[tuple[str, bytes | None]] = ()) -> None:
        self.next_offset += gap
        base = self.next_offset
        records = []
        for i in range(n):
            off = base + i
            rec = (f"k{off}".encode() if off % 3 else None, f"value-{off}".encode() * (1 + off % 4),
                   tuple(headers), BASE_TIME + off * 10)
            records.append(rec)
            self.written.records[off] = rec
        if transactional:
            self.open_txn.setdefault(producer_id, base)
            self.txn_offsets.setdefault(producer_id, []).extend(range(base, base + n))
        data = encode_batch(records, base_offset=base, compression=self.compression, producer_id=producer_id,
                            producer_epoch=0 if producer_id >= 0 else -1, base_sequence=0 if producer_id >= 0 else -1,
                            transactional=transactional)
        self.segments[-1].append(data, base + n - 1, BASE_TIME + (base + n - 1) * 10)
        self.next_offset = base + n

    def end_txn(self, producer_id: int, commit: bool) -> None:
        first = self.open_txn.pop(producer_id)
        off = self.next_offset
        data = encode_control_batch(ControlType.COMMIT if commit else ControlType.ABORT, base_offset=off,
                                    producer_id=producer_id, producer_epoch=0, timestamp=BASE_TIME + off * 10)
        self.segments[-1].append(data, off, BASE_TIME + off * 10)
        if not commit:
            self.segments[-1].txn.append((producer_id, first, off, first))
            self.written.aborted.update(self.txn_offsets[producer_id])
        self.txn_offsets.pop(producer_id, None)
        self.next_offset = off + 1

    def write(self, **kwargs: object) -> Path:
        for seg in self.segments:
            seg.write(self.directory, **kwargs)  # type: ignore[arg-type]
        return self.directory
