"""Find where every v2 record starts, for many batches at once.

A record's position depends on the previous record's length, so one batch is a serial chain. But
batches are independent: each is a lane, and one numpy step advances every lane by one record
(lanes sorted by record count, so the active ones are always a prefix). When few lanes remain,
a plain Python loop over the length bytes finishes them; a table gives the step for one- and
two-byte lengths.
"""

from __future__ import annotations

import numpy as np

from kafka_spark.records.varints import ADVANCE, ADVANCE_LIST, VarintError, read_slow

MIN_LANES = 32
"""Below this many active lanes a numpy step costs more than walking them in Python."""


class WalkError(Exception):
    """The lengths do not chain to the end of a batch: the bytes are corrupt."""


def record_starts(u8: np.ndarray, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Start positions of every record, batch after batch (int64, `counts.sum()` long).

    `starts[i]`..`ends[i]` is the records section of batch i in `u8`, holding `counts[i]` records.
    Raises WalkError when a section's lengths do not add up to exactly its size. Callers still
    check that each decoded record ends where the next starts: that, not this walk, is the proof.
    """
    total = int(counts.sum())
    out = np.empty(total, dtype=np.int64)
    if total == 0:
        if not np.array_equal(starts, ends):
            raise WalkError("bytes follow the last record of a batch")
        return out
    base = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=base[1:])
    order = np.argsort(-counts, kind="stable")
    lane_counts = counts[order]
    pos = starts[order].astype(np.int64)
    lane_base = base[order]
    lane_ends = ends[order]
    # active[k]: lanes holding more than k records, i.e. still walking at step k.
    active = np.searchsorted(-lane_counts, -np.arange(1, int(lane_counts[0]) + 1), side="right").tolist()
    rows: list[np.ndarray] = []
    table = ADVANCE
    try:
        for step, n in enumerate(active):
            if n < MIN_LANES:
                _finish_in_python(u8, pos[:n], lane_base[:n], lane_counts[:n], lane_ends[:n], step, out)
                break
            lanes = pos[:n]
            rows.append(lanes.copy())
            word = u8[lanes + 1].astype(np.int32)
            word <<= 8
            word |= u8[lanes]
            advance = table[word]
            if not advance.all():
                _slow_advance(u8, lanes, advance)
            lanes += advance
    except (IndexError, VarintError):
        raise WalkError("record lengths run past the data") from None
    if not np.array_equal(pos, lane_ends):
        raise WalkError("record lengths do not add up to the batch size")
    if rows:
        # Row k holds the k-th record start of the first active[k] lanes; place them by batch.
        widths = np.array([len(r) for r in rows], dtype=np.int64)
        step_of = np.repeat(np.arange(len(rows), dtype=np.int64), widths)
        lane_of = np.arange(len(step_of), dtype=np.int64) - np.repeat(np.cumsum(widths) - widths, widths)
        out[lane_base[lane_of] + step_of] = np.concatenate(rows)
    return out


def _slow_advance(u8: np.ndarray, pos: np.ndarray, advance: np.ndarray) -> None:
    # Lengths of three bytes or more (records over 8 KiB), or negative ones.
    slow = np.flatnonzero(advance == 0)
    value, size = read_slow(u8, pos[slow], long=False)
    if (value < 0).any():
        raise VarintError("negative record length")
    advance[slow] = size + value


def _finish_in_python(
    u8: np.ndarray, pos: np.ndarray, base: np.ndarray, counts: np.ndarray, ends: np.ndarray, step: int,
    out: np.ndarray,
) -> None:
    data = memoryview(u8)
    table = ADVANCE_LIST
    for lane in range(len(pos)):
        p = start = int(pos[lane])
        todo = int(counts[lane]) - step
        b = int(base[lane]) + step
        try:
            chain = [p := p + table[data[p] | (data[p + 1] << 8)] for _ in range(todo)]
        except IndexError:
            chain = []
        # A table miss (a length of three bytes or more) stalls the chain short of the end.
        if not chain or chain[-1] != ends[lane]:
            chain = _slow_chain(u8, start, todo)
        out[b] = start
        out[b + 1 : b + todo] = chain[:-1]
        pos[lane] = chain[-1]


def _slow_chain(u8: np.ndarray, p: int, todo: int) -> list[int]:
    # Record by record with a general varint reader (lengths of any size, and their checks).
    data = memoryview(u8)
    chain = []
    for _ in range(todo):
        length, p = _varint32(data, p)
        if length < 0:
            raise VarintError("negative record length")
        p += length
        chain.append(p)
    return chain


def _varint32(data: memoryview, p: int) -> tuple[int, int]:
    raw = 0
    for i in range(5):
        byte = data[p + i]
        raw |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            raw &= 0xFFFFFFFF
            return (raw >> 1) ^ -(raw & 1), p + i + 1
    raise VarintError("varint longer than 5 bytes")
