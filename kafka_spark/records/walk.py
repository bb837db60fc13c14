"""Find where every v2 record starts, for many batches at once.

A record's position depends on the previous record's length, so one batch is a serial chain. But
batches are independent: each is a lane, and numpy advances all lanes together.

- Runs: fixed-size values are common, so a step first guesses that the next records repeat the
  current record's length and checks the guess for up to `span` records per lane at once, keeping
  the run that holds; `span` doubles while guesses hold.
- Steps: when guesses stop paying, every lane advances one record per numpy step (lanes sorted
  by records left, so the active ones are a prefix), and a plain Python loop over the length bytes
  finishes the last few long lanes.

A 64 Ki-entry table gives the step for one- and two-byte lengths.
"""

from __future__ import annotations

import numpy as np

from kafka_spark.records.varints import ADVANCE, ADVANCE_LIST, VarintError, read_slow

MIN_LANES = 48
"""Below this many active lanes a one-record numpy step costs more than walking them in Python."""
MIN_RUN = 4
"""Guessing runs continues while lanes confirm at least this many records per step on average."""
MAX_SPAN = 256


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
    pos = starts.astype(np.int64)
    if total:
        done = np.zeros(len(counts), dtype=np.int64)  # index in `out` of each lane's next record
        np.cumsum(counts[:-1], out=done[1:])
        left = counts.astype(np.int64)
        try:
            lanes = _runs(u8, pos, done, left, out)
            if len(lanes):
                _steps(u8, pos, done, left, ends, lanes, out)
        except (IndexError, VarintError):
            raise WalkError("record lengths run past the data") from None
    if not np.array_equal(pos, ends):
        raise WalkError("record lengths do not add up to the batch size")
    return out


def _runs(u8: np.ndarray, pos: np.ndarray, done: np.ndarray, left: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Advance lanes by runs of equal-length records while that pays; return the unfinished lanes."""
    lanes = np.flatnonzero(left)
    last = len(u8) - 2
    span = 8
    while len(lanes):
        p = pos[lanes]
        todo = left[lanes]
        width = min(span, int(todo.max()))
        if width < 2:
            return lanes
        step = _advance(u8, p)
        # Record j of a run starts at p + j*step; a wrong guess may point anywhere, so reads are
        # kept inside the buffer and the guess must match the length found there.
        guess = p[:, None] + step[:, None] * np.arange(width)
        np.minimum(guess, last, out=guess)
        word = u8[guess[:, 1:] + 1].astype(np.int32)
        word <<= 8
        word |= u8[guess[:, 1:]]
        same = ADVANCE[word] == step[:, None]
        run = np.where(same.all(axis=1), width, same.argmin(axis=1) + 1)
        np.minimum(run, todo, out=run)
        keep = np.arange(width) < run[:, None]
        out[(done[lanes][:, None] + np.arange(width))[keep]] = guess[keep]
        pos[lanes] = p + run * step
        done[lanes] += run
        left[lanes] = todo - run
        mean = float(run.mean())
        lanes = lanes[left[lanes] > 0]
        if mean < MIN_RUN:
            return lanes
        if mean > 0.75 * width:
            span = min(2 * span, MAX_SPAN)
    return lanes


def _steps(u8: np.ndarray, pos: np.ndarray, done: np.ndarray, left: np.ndarray, ends: np.ndarray,
           lanes: np.ndarray, out: np.ndarray) -> None:
    """Advance `lanes` one record per numpy step, then finish the longest few in Python."""
    order = lanes[np.argsort(-left[lanes], kind="stable")]
    counts = left[order]
    base = done[order]
    at = pos[order]
    # active[k]: lanes with more than k records left, i.e. still walking at step k.
    active = np.searchsorted(-counts, -np.arange(1, int(counts[0]) + 1), side="right").tolist()
    rows: list[np.ndarray] = []
    tail = 0
    for k, n in enumerate(active):
        if n < MIN_LANES:
            tail = n
            done[order[:n]] = base[:n] + k
            left[order[:n]] = counts[:n] - k
            break
        walking = at[:n]
        rows.append(walking.copy())
        walking += _advance(u8, walking)
    pos[order] = at
    if rows:
        # Row k holds the k-th record start of the first active[k] lanes; place them by batch.
        widths = np.array([len(r) for r in rows], dtype=np.int64)
        step_of = np.repeat(np.arange(len(rows), dtype=np.int64), widths)
        lane_of = np.arange(len(step_of), dtype=np.int64) - np.repeat(np.cumsum(widths) - widths, widths)
        out[base[lane_of] + step_of] = np.concatenate(rows)
    if tail:
        _finish_in_python(u8, pos, done, left, ends, order[:tail], out)


def _advance(u8: np.ndarray, pos: np.ndarray) -> np.ndarray:
    word = u8[pos + 1].astype(np.int32)
    word <<= 8
    word |= u8[pos]
    step = ADVANCE[word]
    if not step.all():
        _slow_advance(u8, pos, step)
    return step


def _slow_advance(u8: np.ndarray, pos: np.ndarray, advance: np.ndarray) -> None:
    # Lengths of three bytes or more (records over 8 KiB), or negative ones.
    slow = np.flatnonzero(advance == 0)
    value, size = read_slow(u8, pos[slow], long=False)
    if (value < 0).any():
        raise VarintError("negative record length")
    advance[slow] = size + value


def _finish_in_python(
    u8: np.ndarray, pos: np.ndarray, done: np.ndarray, left: np.ndarray, ends: np.ndarray, lanes: np.ndarray,
    out: np.ndarray,
) -> None:
    data = u8.data
    table = ADVANCE_LIST
    for lane in lanes.tolist():
        p = start = int(pos[lane])
        todo = int(left[lane])
        b = int(done[lane])
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
        left[lane] = 0


def _slow_chain(u8: np.ndarray, p: int, todo: int) -> list[int]:
    # Record by record with a general varint reader (lengths of any size, and their checks).
    data = u8.data
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
