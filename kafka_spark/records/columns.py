"""Decoded records as parallel numpy arrays: where keys, values and headers lie in a source buffer,
plus offsets and timestamps. Building Arrow columns from this copies each key/value exactly once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_EMPTY = np.empty(0, dtype=np.int64)


@dataclass(slots=True)
class Headers:
    """All headers of the records, flattened in record order; `count[i]` belong to record i."""

    count: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray


@dataclass(slots=True)
class Columns:
    """Records in a source buffer; a negative key/value length means null."""

    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    timestamp_type: np.ndarray
    headers: Headers | None = None

    def __len__(self) -> int:
        return len(self.offset)

    @classmethod
    def empty(cls) -> Columns:
        return cls(_EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY, np.empty(0, dtype=np.int32))

    def take(self, rows: np.ndarray) -> Columns:
        """The records at `rows` (ascending indices)."""
        headers = None
        if self.headers is not None:
            h = self.headers
            count = h.count[rows]
            start = np.zeros(len(h.count), dtype=np.int64)
            np.cumsum(h.count[:-1], out=start[1:])
            flat = ranges(start[rows], count)
            headers = Headers(count, h.key_pos[flat], h.key_len[flat], h.value_pos[flat], h.value_len[flat])
        return Columns(
            self.key_pos[rows], self.key_len[rows], self.value_pos[rows], self.value_len[rows],
            self.offset[rows], self.timestamp[rows], self.timestamp_type[rows], headers,
        )

    @classmethod
    def concat(cls, parts: list[Columns]) -> Columns:
        """All records of `parts`, in order (they must share one source buffer)."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls.empty()
        headers = None
        if any(p.headers is not None for p in parts):
            hs = [p.headers if p.headers is not None else _no_headers(len(p)) for p in parts]
            headers = Headers(*(np.concatenate([getattr(h, f) for h in hs]) for f in Headers.__slots__))

        def joined(field: str) -> np.ndarray:
            return np.concatenate([getattr(p, field) for p in parts])

        return cls(
            joined("key_pos"), joined("key_len"), joined("value_pos"), joined("value_len"),
            joined("offset"), joined("timestamp"), joined("timestamp_type"), headers,
        )


def _no_headers(n: int) -> Headers:
    return Headers(np.zeros(n, dtype=np.int64), _EMPTY, _EMPTY, _EMPTY, _EMPTY)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + c) for each (s, c)."""
    total = int(counts.sum())
    if total == 0:
        return _EMPTY
    ends = np.cumsum(counts)
    shift = np.repeat(starts - (ends - counts), counts)
    return np.arange(total, dtype=np.int64) + shift
