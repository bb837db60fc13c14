"""How much a batch takes: Spark's `maxOffsetsPerTrigger` division (also a batch load's record cap) and
its `minOffsetsPerTrigger` gate.

Pure arithmetic over offset maps (next offset to read per topic-partition), so the stream reader's
batch boundaries are those of Spark's Kafka source and can be checked without a broker.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

from kafka_spark.client.metadata import TopicPartition

Offsets = Mapping[TopicPartition, int]
LONG_MAX = 2**63 - 1


def rate_limit(limit: int, start: Offsets, until: Offsets,
               earliest_of_new: Callable[[list[TopicPartition]], Mapping[TopicPartition, int]] | None = None,
               *, exact: bool = False) -> dict[TopicPartition, int]:
    """End offsets of a batch of about `limit` offsets, shared in proportion to each backlog.

    Spark's rule (`maxOffsetsPerTrigger`): a partition new since `start` begins at its earliest offset
    (fetched only if needed); each non-empty partition gets `limit * size / total`, floored, but at
    least one offset; partitions with nothing to read keep their `until` value; partitions absent from
    `until` (deleted) are absent from the result.

    `exact` (a batch load's record cap) takes exactly `limit` offsets when there are more: no share is
    raised to one, and what flooring leaves goes one offset each to the largest backlogs.
    """
    new = [tp for tp in until if tp not in start]
    begins: dict[TopicPartition, int] = dict(start)
    if new and earliest_of_new is not None:
        begins.update(earliest_of_new(new))
    sizes = {tp: until[tp] - begin for tp, begin in begins.items() if tp in until and until[tp] - begin > 0}
    if sum(sizes.values()) < 1:
        return dict(until)
    shares = _filled_shares(limit, sizes) if exact else _spark_shares(limit, sizes)
    return {tp: min(end, begins[tp] + shares[tp], LONG_MAX) if tp in shares else end for tp, end in until.items()}


def _spark_shares(limit: int, sizes: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    # In doubles, the division first, as Spark computes it.
    total = float(sum(sizes.values()))
    shares = {}
    for tp, size in sizes.items():
        prorate = limit * (size / total)
        shares[tp] = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
    return shares


def _filled_shares(limit: int, sizes: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    # In integers, so that large offsets round no share up past the cap.
    total = sum(sizes.values())
    shares = {tp: min(size, limit * size // total) for tp, size in sizes.items()}
    # The rounding remainder goes to the largest backlogs, so that the cap is used exactly.
    left = limit - sum(shares.values())
    for tp in sorted(sizes, key=lambda t: -sizes[t]):
        if left <= 0:
            break
        if shares[tp] < sizes[tp]:
            shares[tp] += 1
            left -= 1
    return shares


class TriggerGate:
    """`minOffsetsPerTrigger` with `maxTriggerDelay`: whether a trigger should wait for more data.

    The timer lives in memory, as in Spark: the first trigger after a (re)start always runs.
    """

    def __init__(self, min_offsets: int, max_delay_ms: int, clock: Callable[[], float] = time.time) -> None:
        self.min_offsets = min_offsets
        self.max_delay_ms = max_delay_ms
        self.clock = clock
        self.last_trigger_ms = 0

    def delay(self, start: Offsets, latest: Offsets) -> bool:
        """True to skip this trigger: too few new offsets and the delay has not expired."""
        now = int(self.clock() * 1000)
        if now - self.last_trigger_ms >= self.max_delay_ms:
            self.last_trigger_ms = now
            return False
        # A partition new since `start` counts from 0, not from its earliest offset (Spark does the same).
        pending = sum(end - start.get(tp, 0) for tp, end in latest.items())
        if pending < self.min_offsets:
            return True
        self.last_trigger_ms = now
        return False


def behind_latest(latest: Offsets, consumed: Offsets) -> dict[str, str]:
    """Spark's source metrics `{min,max,avg}OffsetsBehindLatest` (strings; empty when unknown)."""
    if not latest or not consumed:
        return {}
    behind = [end - consumed.get(tp, end) for tp, end in latest.items()]
    return {
        "minOffsetsBehindLatest": str(min(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "avgOffsetsBehindLatest": repr(float(sum(behind)) / len(behind)),
    }
