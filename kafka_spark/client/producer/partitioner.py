"""The Java producer's partitioning: murmur2 of the key bytes, and a sticky partition for null keys."""

from __future__ import annotations

import random

# murmur2 constants, shared with the vectorised version (murmur_vector.py)
MURMUR_M = 0x5BD1E995
MURMUR_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (``Utils.murmur2``) as a signed 32-bit int."""
    length = len(data)
    h = (MURMUR_SEED ^ length) & _MASK
    end = length & ~3
    for i in range(0, end, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * MURMUR_M) & _MASK
        k ^= k >> 24
        k = (k * MURMUR_M) & _MASK
        h = (h * MURMUR_M) & _MASK
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[end + 2] << 16
    if rest >= 2:
        h ^= data[end + 1] << 8
    if rest >= 1:
        h ^= data[end]
        h = (h * MURMUR_M) & _MASK
    h ^= h >> 13
    h = (h * MURMUR_M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition the Java producer picks for a non-null key."""
    if num_partitions <= 0:
        raise ValueError("a topic has at least one partition")
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """Null-key records stick to one partition until its batch is sent, then move on (KIP-480)."""

    def __init__(self) -> None:
        self._current: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int,
                  available: list[int] | None = None) -> int:
        """The partition for a record: by key hash, else the topic's current sticky partition."""
        if key is not None:
            return partition_for_key(key, num_partitions)
        current = self._current.get(topic)
        if current is None or current >= num_partitions:
            current = self._pick(num_partitions, available, None)
            self._current[topic] = current
        return current

    def batch_completed(self, topic: str, num_partitions: int, available: list[int] | None = None) -> None:
        """Move the topic's null-key records to another partition once a batch is full."""
        self._current[topic] = self._pick(num_partitions, available, self._current.get(topic))

    @staticmethod
    def _pick(num_partitions: int, available: list[int] | None, previous: int | None) -> int:
        choices = [p for p in (available or range(num_partitions)) if p != previous] or [previous or 0]
        return random.choice(choices)
