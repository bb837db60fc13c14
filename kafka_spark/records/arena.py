"""A growable byte buffer reused across decode calls, so decompressed batches land in warm memory."""

from __future__ import annotations

import numpy as np

# Zero bytes kept after the used part: vectorised readers may look one byte past a record's end.
PADDING = 16


class Arena:
    """Append-only bytes in one numpy buffer; `reset()` makes it reusable without freeing it."""

    def __init__(self, capacity: int = 1 << 20, max_retained: int = 128 << 20) -> None:
        self._buf = np.empty(capacity + PADDING, dtype=np.uint8)
        self.size = 0
        self.max_retained = max_retained

    @property
    def capacity(self) -> int:
        return len(self._buf) - PADDING

    def reset(self) -> None:
        """Forget the contents; drop the buffer if it grew beyond `max_retained`."""
        self.size = 0
        if self.capacity > self.max_retained:
            self._buf = np.empty(self.max_retained + PADDING, dtype=np.uint8)

    def reserve(self, n: int) -> memoryview:
        """A writable view of `n` bytes after the used part (valid until the next reserve/append)."""
        need = self.size + n
        if need > self.capacity:
            grown = np.empty(max(need, 2 * self.capacity) + PADDING, dtype=np.uint8)
            grown[: self.size] = self._buf[: self.size]
            self._buf = grown
        # `.data` is memoryview(array); numpy's stubs make arrays buffers only from Python 3.12.
        return self._buf.data[self.size : need]

    def commit(self, n: int) -> int:
        """Mark `n` reserved bytes as used; return the position where they start."""
        start = self.size
        self.size += n
        return start

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Copy `data` in; return its start position."""
        n = len(data)
        self.reserve(n)[:] = data
        return self.commit(n)

    def view(self) -> np.ndarray:
        """The used bytes plus zeroed padding, as a uint8 array (valid until the next write)."""
        self._buf[self.size : self.size + PADDING] = 0
        return self._buf[: self.size + PADDING]

    def used(self) -> memoryview:
        """The used bytes (valid until the next write)."""
        return self._buf.data[: self.size]
