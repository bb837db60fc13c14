"""`.txnindex`: the aborted transactions whose ABORT marker lies in a segment.

Each 34-byte entry holds a version (Kafka reads only its first byte), the producer id, the first
offset of the transaction (possibly in an earlier segment), the marker's offset and the last stable
offset when it was written. A partial trailing entry is ignored, as Kafka does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_spark.segments.errors import IndexCorruptError

TXN_SLOT = 34
_ENTRY = struct.Struct(">bxqqqq")

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: offsets [first_offset, last_offset] of `producer_id` (last = the marker)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


def read_txn_index(data: Buffer, path: str = "<txnindex>") -> list[AbortedTxn]:
    """The entries of a `.txnindex`; a version other than 0 is an error, as in Kafka."""
    out = []
    for pos in range(0, len(data) - TXN_SLOT + 1, TXN_SLOT):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version > 0:
            raise IndexCorruptError(
                f"Unexpected aborted transaction version {version} in transaction index {path}, current version is 0"
            )
        out.append(AbortedTxn(pid, first, last, lso, version))
    return out


def aborted_between(entries: Iterable[AbortedTxn], start: int, end: int | None) -> list[AbortedTxn]:
    """The transactions that may hold records in [start, end): marker at or after `start`, begun before `end`."""
    return [e for e in entries if e.last_offset >= start and (end is None or e.first_offset < end)]


def as_fetch_aborted(entries: Iterable[AbortedTxn]) -> list[tuple[int, int]]:
    """(producer id, first offset) pairs, the form a fetch response and the record decoder use."""
    return [(e.producer_id, e.first_offset) for e in entries]


__all__ = ["AbortedTxn", "aborted_between", "as_fetch_aborted", "read_txn_index"]
