"""Where each Avro datum of a batch ends, found column-wise with numpy before a native reader sees the bytes.

Native block readers trust the data more than a Kafka task can: measured on DataFusion 55 and jetliner 0.2, a
datum with bytes after its value hangs the reader, an array count of 2^40 in six bytes aborts the process on
an allocation, an out-of-range union branch is read as some value. So every datum is walked first, all records
at once, one schema node at a time (an array's items one round per item): varints of at most 10 bytes, lengths
and counts within the datum's bytes, union branches and enum symbols in range, ints within 32 bits. A datum
passes only when its value ends exactly at its last byte; anything else (corrupt, truncated, trailing bytes, an
array longer than `MAX_ROUNDS` items) goes to the per-record path, which gives today's value or error for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kafka_spark.formats.avro.types import definition

# Rounds of one array or map node (items plus block counts): past it a datum is left to the per-record path,
# which keeps the walk's cost bounded by the batch rather than by one record's array.
MAX_ROUNDS = 1024
_FIXED_WIDTH = {"boolean": 1, "float": 4, "double": 8}
_INT32 = (-(1 << 31), (1 << 31) - 1)
_HIGH_BITS = np.uint64(0x8080808080808080)
_SIZES = np.uint64(0x0102030405060708)


def _last_bit(word: np.ndarray) -> np.ndarray:
    """For each `word` (the first eight bytes of a varint, little-endian), the high bit of the byte that ends the
    varint alone (bit 8k+7 when byte k ends it), 0 when all eight continue it."""
    stops = ~word & _HIGH_BITS
    return stops & (np.uint64(0) - stops)


def _size(last_bit: np.ndarray) -> np.ndarray:
    """The varints' sizes in bytes from their `_last_bit`s (0 past eight): 256^k times the bytes 8..1 puts k+1 in
    the top byte, with no branch per row."""
    return (((last_bit >> np.uint64(7)) * _SIZES) >> np.uint64(56)).view(np.int64)


def _pack7(word: np.ndarray) -> np.ndarray:
    """The 7-bit groups of each byte of `word` (little-endian) packed into one number: 56 bits at most."""
    x = word & np.uint64(0x7F7F7F7F7F7F7F7F)
    x = (x & np.uint64(0x007F007F007F007F)) | ((x & np.uint64(0x7F007F007F007F00)) >> np.uint64(1))
    x = (x & np.uint64(0x00003FFF00003FFF)) | ((x & np.uint64(0x3FFF00003FFF0000)) >> np.uint64(2))
    return (x & np.uint64(0x000000000FFFFFFF)) | ((x & np.uint64(0x0FFFFFFF00000000)) >> np.uint64(4))


class _Walk:
    """Cursors (`pos`) of every datum in `data`, `end` its limit, `ok` False once a datum is refused."""

    def __init__(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray, named: Mapping[str, Any]) -> None:
        self.data = data if len(data) else np.zeros(1, np.uint8)  # reads past the end clip to a byte of it
        self.pos = starts.astype(np.int64, copy=True)
        self.end = ends.astype(np.int64, copy=False)
        self.ok = np.ones(len(starts), dtype=bool)
        self.named = named
        self._aligned: np.ndarray | None = None

    def refuse(self, idx: np.ndarray, bad: np.ndarray) -> np.ndarray:
        """Mark idx[bad] refused; the indexes still walked."""
        if bad.any():
            self.ok[idx[bad]] = False
            return idx[~bad]
        return idx

    def varint(self, idx: np.ndarray, value: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(the zigzag-decoded longs at the cursors of `idx`, the indexes whose varint was whole); cursors move.
        With `value` False only the sizes are found (a long's value is never checked) and the longs are zeros."""
        decoded, whole = self.varints(idx, value)
        return (decoded, idx) if whole.all() else (decoded[whole], idx[whole])

    def varints(self, idx: np.ndarray, value: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(the zigzag-decoded longs at the cursors of `idx`, whether each was whole); the broken ones refused."""
        full = len(idx) == len(self.pos)  # every datum, in order (the top level of most schemas): no gathers
        start, end = (self.pos.copy(), self.end) if full else (self.pos[idx], self.end[idx])
        if not value:  # a long: ids, counters and times are mostly longer than a byte, read as words at once
            raw, size, whole = self._words_varints(start, end, value)
            return self._moved(idx, full, raw, size, whole)
        # lengths, branches and symbols are mostly one byte: those are done with one read of a byte each
        byte = self.data.take(start, mode="clip")
        ends = (byte < 0x80) & (start < end)
        live = np.flatnonzero(~ends)
        if len(live) * 2 > len(start):  # mostly longer (counters, ids, times): every one read as a word
            raw, size, whole = self._words_varints(start, end, value)
        else:
            raw, size, whole = byte.astype(np.uint64), ends.astype(np.int64), ends
            if len(live):
                whole = ends.copy()
                raw[live], size[live], whole[live] = self._words_varints(start[live], end[live], value)
        return self._moved(idx, full, raw, size, whole)

    def _moved(self, idx: np.ndarray, full: bool, raw: np.ndarray, size: np.ndarray,
               whole: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        decoded = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
        if full:
            self.pos += size
        else:
            self.pos[idx] += size
        if not whole.all():
            self.ok[idx[~whole]] = False
        return decoded, whole

    def _words_varints(self, start: np.ndarray, end: np.ndarray,
                       value: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(raw value, size, whole) of the varints at `start`: eight bytes read as one word, the first byte under
        0x80 found by its bit, the 7-bit groups packed in three steps; nine and ten bytes from the two after."""
        word = self._words(start)
        last = _last_bit(word)
        size = _size(last)
        # the varint's own bytes: every bit up to its last byte's (all eight bytes when it goes on)
        raw = _pack7(word & ((last << np.uint64(1)) - np.uint64(1))) if value else np.zeros(len(start), np.uint64)
        rest = np.flatnonzero(size == 0)
        if len(rest):  # eight bytes of continuation: the 9th ends it, or the 10th with the 64th bit alone
            at = start[rest] + 8
            ninth = self.data.take(at, mode="clip").astype(np.uint64)
            tenth = self.data.take(at + 1, mode="clip").astype(np.uint64)
            nine = ninth < 0x80
            ten = ~nine & (tenth <= 1)
            if value:
                raw[rest] |= ((ninth & np.uint64(0x7F)) << np.uint64(56)) | np.where(ten, tenth << np.uint64(63),
                                                                                     np.uint64(0))
            size[rest] = np.where(nine, 9, np.where(ten, 10, 0))
        whole = (size > 0) & (start + size <= end)
        return raw, size, whole

    def _words(self, start: np.ndarray) -> np.ndarray:
        """The eight bytes at each of `start` as a little-endian word (zeros past the data): two aligned reads."""
        if self._aligned is None:
            padded = np.zeros((len(self.data) + 23) // 8 * 8, np.uint8)
            padded[:len(self.data)] = self.data
            self._aligned = padded.view("<u8")
        slot = start >> 3
        shift = ((start & 7) << 3).astype(np.uint64)
        # a shift by 64 gives 0 in numpy: an aligned start takes nothing of the next word; cursors of datums refused
        # already may lie anywhere (clipped: what they read no longer matters)
        low = self._aligned.take(slot, mode="clip")
        return (low >> shift) | (self._aligned.take(slot + 1, mode="clip") << (np.uint64(64) - shift))

    def advance(self, idx: np.ndarray, width: np.ndarray | int) -> np.ndarray:
        """Move the cursors of `idx` by `width` bytes; refuse those that would pass their datum's end."""
        if len(idx) == len(self.pos):
            self.pos += width
            return self.refuse(idx, self.pos > self.end)
        moved = self.pos[idx] + width
        bad = moved > self.end[idx]
        self.pos[idx] = moved
        return self.refuse(idx, bad)

    def node(self, node: Any, idx: np.ndarray) -> np.ndarray:
        """Walk one value of `node` for the datums `idx`; the indexes still walked."""
        if len(idx) == 0:
            return idx
        node = definition(node, self.named)
        if isinstance(node, list):
            return self._union(node, idx)
        kind = node if isinstance(node, str) else node["type"]
        if kind == "null":
            return idx
        if kind in _FIXED_WIDTH:
            return self.advance(idx, _FIXED_WIDTH[kind])
        if kind in ("int", "long", "enum"):
            value, idx = self.varint(idx, kind != "long")
            if kind == "int":
                return self.refuse(idx, (value < _INT32[0]) | (value > _INT32[1]))
            if kind == "enum":
                return self.refuse(idx, (value < 0) | (value >= len(node["symbols"])))
            return idx
        if kind in ("bytes", "string"):
            size, idx = self.varint(idx)
            idx = self.refuse(idx, size < 0)
            return self.advance(idx, size[size >= 0])
        if kind == "fixed":
            return self.advance(idx, int(node["size"]))
        if kind in ("record", "error"):
            run: list[int | None] = []  # consecutive fields of longs (None) and fixed widths, walked as one
            for f in node["fields"]:
                width = self._plain(f["type"])
                if width != -1:
                    run.append(width)
                    continue
                idx = self._run(run, idx)
                run = []
                idx = self.node(f["type"], idx)
            return self._run(run, idx)
        if kind == "array":
            return self._blocks(idx, (node["items"],))
        if kind == "map":
            return self._blocks(idx, ("string", node["values"]))
        raise ValueError(f"Avro type {kind!r} is not walked")

    def _plain(self, node: Any) -> int | None:
        """A value's width when fixed, None for a long (its value is never checked), -1 for anything else."""
        node = definition(node, self.named)
        kind = node if isinstance(node, str) else node["type"] if isinstance(node, dict) else None
        if kind == "long":
            return None
        if kind in _FIXED_WIDTH:
            return _FIXED_WIDTH[kind]
        return int(node["size"]) if kind == "fixed" else -1

    def _run(self, run: list[int | None], idx: np.ndarray) -> np.ndarray:
        """Walk a run of longs and fixed widths with one bounds check at its end: cursors only move forward, so a
        datum whose cursor passes its end in the run is past it after the run too."""
        if not run or len(idx) == 0:
            return idx
        full = len(idx) == len(self.pos)
        pos = self.pos if full else self.pos[idx]
        end = self.end if full else self.end[idx]
        skip = 0
        for width in run:
            if width is not None:
                skip += width
                continue
            if skip:
                pos += skip
                skip = 0
            size = _size(_last_bit(self._words(pos)))
            longer = np.flatnonzero(size == 0)
            if len(longer):  # nine or ten bytes, or a broken varint: sized to pass the datum's end
                _, sizes, whole = self._words_varints(pos[longer], end[longer], False)
                size[longer] = np.where(whole, sizes, np.maximum(end[longer] - pos[longer], 0) + 1)
            pos += size
        pos += skip
        if not full:
            self.pos[idx] = pos
        return self.refuse(idx, pos > end)

    def _union(self, members: list[Any], idx: np.ndarray) -> np.ndarray:
        branch, idx = self.varint(idx)
        keep = (branch >= 0) & (branch < len(members))
        idx, branch = self.refuse(idx, ~keep), branch[keep]
        walked = [self.node(m, idx[branch == i]) for i, m in enumerate(members)]
        return np.sort(np.concatenate(walked)) if walked else idx

    def _blocks(self, idx: np.ndarray, item: tuple[Any, ...]) -> np.ndarray:
        """An array's or map's blocks: a count, that many items, ..., a count of 0. A negative count (followed
        by the block's byte size, which a reader may use to skip) is refused: no common encoder writes one, and
        a size that lies would set a reader and this walk apart."""
        done: list[np.ndarray] = []
        left = np.zeros(len(self.pos), np.int64)
        active = idx
        for _ in range(MAX_ROUNDS):
            if len(active) == 0:
                break
            counting = active[left[active] == 0]
            if len(counting):
                count, whole = self.varints(counting)
                # items take a byte at least (zero-width items never reach the block path): a count beyond the
                # bytes left is corrupt, refused before any reader sizes a buffer by it
                bad = whole & ((count < 0) | (count > self.end[counting] - self.pos[counting]))
                self.ok[counting[bad]] = False
                good = whole & ~bad
                left[counting[good]] = count[good]
                done.append(counting[good & (count == 0)])
                active = active[self.ok[active] & (left[active] > 0)]
            walked = active
            for part in item:
                walked = self.node(part, walked)
            left[walked] -= 1
            active = active[self.ok[active]]
        else:
            self.ok[active] = False  # longer than the walk's rounds: the per-record path takes these datums
        return np.sort(np.concatenate(done)) if done else np.zeros(0, np.int64)


def exact_datums(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, schema: Any,
                 named: Mapping[str, Any]) -> np.ndarray:
    """Whether each datum data[starts[i]:ends[i]] is one well-formed value of `schema` using every byte.

    `schema` is a fastavro-parsed writer schema that `risks` finds neither recursive nor unbounded.
    """
    walk = _Walk(data, starts, ends, named)
    walked = walk.node(schema, np.arange(len(starts), dtype=np.int64))
    exact = np.zeros(len(starts), dtype=bool)
    exact[walked] = walk.pos[walked] == walk.end[walked]
    return exact & walk.ok
