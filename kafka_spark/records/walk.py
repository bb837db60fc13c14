"""Find where every v2 record starts, for many batches at once.

A record's position depends on the previous record's length, so one batch is a serial chain. But
batches are independent: each is a lane, and one numpy step advances every lane by one record
(lanes sorted by record count, so the active ones are always a prefix). When few lanes remain,
a plain Python loop over the length bytes finishes them; a table gives the step for one- and
two-byte lengths.
"""

from __future__ import annotations

import numpy as np

from kafka_spark.records.varints import ADVANCE, ADVANCE_LIST, VarintError, read_slow, word_at

MIN_LANES = 48
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
        return out
    base = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=base[1:])
    order = np.argsort(-counts, kind="stable")
    lane_counts = counts[order]
    pos = starts[order].astype(np.int64)
    lane_base = base[order]
    lane_ends = ends[order]
    # active[k]: lanes holding more than k records, i.e. still walking at step k.
    active = np.searchsorted(-lane_counts, -np.arange(1, int(lane_counts[0]) + 1), side="right")
    try:
        for step, n in enumerate(active.tolist()):
            if n < MIN_LANES:
                _finish_in_python(u8, pos[:n], lane_base[:n], lane_counts[:n], lane_ends[:n], step, out)
                break
            lanes = pos[:n]
            out[lane_base[:n] + step] = lanes
            lanes += _advance(u8, lanes)
    except (IndexError, VarintError):
        raise WalkError("record lengths run past the data") from None
    if not np.array_equal(pos, lane_ends):
        raise WalkError("record lengths do not add up to the batch size")
    return out


def _advance(u8: np.ndarray, pos: np.ndarray) -> np.ndarray:
    step = ADVANCE[word_at(u8, pos)]
    if not step.all():
        slow = np.flatnonzero(step == 0)
        value, size = read_slow(u8, pos[slow], long=False)
        if (value < 0).any():
            raise VarintError("negative record length")
        step[slow] = size + value
    return step


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
    chain = []
    one = np.empty(1, dtype=np.int64)
    for _ in range(todo):
        one[0] = p
        p += int(_advance(u8, one)[0])
        chain.append(p)
    return chain
