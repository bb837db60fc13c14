"""The idempotent producer's sequence numbers with several requests in flight (no I/O here).

The broker appends a batch of (producer id, epoch) to a partition only if its base sequence follows the last one
it appended, and keeps the last five batches to recognise a resent one (answered with its first offsets). So with
up to five Produce requests in flight, a batch that fails makes every later in-flight batch of its partition fail
with OUT_OF_ORDER_SEQUENCE_NUMBER; they are resent in sequence order, the lowest first, one at a time. The rules
are the Java producer's (`TransactionManager`, `TxnPartitionEntry`, `RecordAccumulator.insertInSequenceOrder` and
`shouldStopDrainBatchesForPartition`):

- a batch gets its sequence when it is first drained, and stays "in flight" for its partition until it is
  acknowledged or fails for good (also while it waits to be resent);
- a batch being resent goes only when it has the lowest sequence in flight; a new batch does not go while its
  partition has in-flight batches of an older producer id or epoch;
- OUT_OF_ORDER_SEQUENCE_NUMBER is retried when the batch is not the one right after the last acknowledged
  sequence (an earlier batch failed) or its sequence was rewritten since it was sent; for the idempotent
  producer it is always retried, and when the batch was the next one a sequence was lost: the epoch is bumped;
- a batch that fails for good leaves a gap: the idempotent producer bumps its epoch (client-side, KIP-360) and
  renumbers the partition's in-flight batches from 0; the transactional producer moves the later in-flight
  sequences down by the failed batch's record count (its transaction must then abort, and `Producer` starts a
  new epoch after the abort);
- UNKNOWN_PRODUCER_ID (the broker lost the producer's state, e.g. to retention) renumbers from 0 when the log
  start moved past the last acknowledged offset;
- a batch refused with MESSAGE_TOO_LARGE is split (`client/producer/batch_split.py`): its pieces take its sequences and
  its place in flight, and go one at a time as resent batches do.

One rule is ours, not Java's: a partition's first batch under a producer id and epoch goes alone, and the next
ones follow once it is acknowledged. A broker before Kafka 4.5 takes any first sequence from a producer it holds
no state for (KAFKA-15591): when the first batch is refused with a retriable error (a partition just created, a
leader moving) and the second is appended, the first can never be written and is lost at delivery.timeout.ms.
"""

from __future__ import annotations

import logging
from bisect import insort
from collections import deque

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.delivery import QueuedBatch

log = logging.getLogger("kafka_spark.client.producer.producer")

OUT_OF_ORDER_SEQUENCE_NUMBER = 45
UNKNOWN_PRODUCER_ID = 59
MAX_IN_FLIGHT_IDEMPOTENT = 5
"""The broker keeps the metadata of a producer's last 5 batches per partition, so more in flight could not be
deduplicated (Java's ``MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION_FOR_IDEMPOTENCE``)."""
_MAX_EPOCH = 32767


def _sequence_key(batch: QueuedBatch) -> int:
    return batch.base_sequence


class _Partition:
    """One partition's sequence state (Java's ``TxnPartitionEntry``)."""

    __slots__ = ("epoch", "in_flight", "last_acked", "last_acked_offset", "next_sequence", "producer_id")

    def __init__(self, producer_id: int, epoch: int) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.next_sequence = 0
        self.last_acked = -1
        self.last_acked_offset = -1
        # sent and not yet acknowledged or failed for good, by sequence (those waiting to be resent too)
        self.in_flight: list[QueuedBatch] = []

    def start_at_beginning(self, producer_id: int, epoch: int) -> None:
        # renumber the in-flight batches from 0 under (producer_id, epoch), in their order
        sequence = 0
        for batch in self.in_flight:
            _rewrite(batch, producer_id, epoch, sequence)
            sequence += len(batch.records)
        self.producer_id, self.epoch = producer_id, epoch
        self.next_sequence = sequence
        self.last_acked = -1

    def remove(self, batch: QueuedBatch) -> None:
        for i, other in enumerate(self.in_flight):
            if other is batch:
                del self.in_flight[i]
                return


def _rewrite(batch: QueuedBatch, producer_id: int, epoch: int, sequence: int) -> None:
    log.info("%s: resetting the sequence of a batch from %d to %d (producer id %d, epoch %d)", batch.tp,
             batch.base_sequence, sequence, producer_id, epoch)
    batch.producer_id, batch.producer_epoch, batch.base_sequence = producer_id, epoch, sequence
    batch.sequence_reset = True
    batch.encoded = None  # the header (and CRC) change: encode again before the next send


class Sequences:
    """Producer id, epoch and per-partition sequences of an idempotent (or transactional) producer.

    Called with the producer's lock held, by the sender thread (and `reset` by init_transactions)."""

    def __init__(self, transactional: bool) -> None:
        self.transactional = transactional
        self.producer_id = -1
        self.epoch = -1
        self._partitions: dict[TopicPartition, _Partition] = {}
        self._bump_for: set[TopicPartition] = set()

    def reset(self, producer_id: int, epoch: int) -> None:
        """A new producer id or epoch from InitProducerId: every partition starts again at sequence 0."""
        self.producer_id, self.epoch = producer_id, epoch
        self._partitions.clear()
        self._bump_for.clear()

    def set_producer(self, producer_id: int, epoch: int) -> None:
        """The id and epoch InitProducerId gave an idempotent producer; a partition numbered under older ones
        starts again at 0 once its in-flight batches are done."""
        self.producer_id, self.epoch = producer_id, epoch

    def _entry(self, tp: TopicPartition) -> _Partition:
        entry = self._partitions.get(tp)
        if entry is None:
            entry = self._partitions[tp] = _Partition(self.producer_id, self.epoch)
        return entry

    def _stale(self, entry: _Partition) -> bool:
        return (entry.producer_id, entry.epoch) != (self.producer_id, self.epoch)

    def first_in_flight(self, tp: TopicPartition) -> int:
        """The lowest sequence in flight for `tp`, -1 when none is."""
        entry = self._partitions.get(tp)
        return entry.in_flight[0].base_sequence if entry is not None and entry.in_flight else -1

    def in_flight(self, tp: TopicPartition) -> list[QueuedBatch]:
        """The batches of `tp` sent and not yet acknowledged or failed for good, by sequence."""
        entry = self._partitions.get(tp)
        return [] if entry is None else list(entry.in_flight)

    def may_send(self, batch: QueuedBatch) -> bool:
        """Whether the first waiting batch of its partition may go now."""
        entry = self._partitions.get(batch.tp)
        if entry is None or not entry.in_flight:
            return True
        if batch.base_sequence < 0:
            # A new batch numbered under the current epoch could be appended before the older epoch's batches;
            # and until the broker acknowledged one batch it may have no state to check the next one against.
            return not self._stale(entry) and entry.last_acked >= 0
        # a resent batch goes only as the lowest in flight: the later ones would fail out of order anyway
        return batch.base_sequence == entry.in_flight[0].base_sequence

    def assign(self, batch: QueuedBatch) -> None:
        """Number a batch drained for the first time (a resent one keeps its numbers)."""
        if batch.base_sequence >= 0:
            return
        entry = self._entry(batch.tp)
        if self._stale(entry) and not entry.in_flight:
            entry.start_at_beginning(self.producer_id, self.epoch)
        batch.producer_id, batch.producer_epoch, batch.base_sequence = self.producer_id, self.epoch, \
            entry.next_sequence
        entry.next_sequence = (entry.next_sequence + len(batch.records)) & 0x7FFFFFFF
        insort(entry.in_flight, batch, key=_sequence_key)

    def completed(self, batch: QueuedBatch, base_offset: int) -> None:
        """The broker appended the batch (or had it already: a duplicate)."""
        entry = self._partitions.get(batch.tp)
        if entry is None or batch.base_sequence < 0:
            return
        entry.last_acked = max(entry.last_acked, batch.base_sequence + len(batch.records) - 1)
        if base_offset >= 0:
            entry.last_acked_offset = max(entry.last_acked_offset, base_offset + len(batch.records) - 1)
        entry.remove(batch)

    def can_retry(self, batch: QueuedBatch, code: int | None, log_start_offset: int = -1) -> bool | None:
        """The sequence rules' verdict on resending a batch refused with `code`: True or False, or None when
        they do not decide (the error's own retriable flag does). May renumber or ask for an epoch bump."""
        entry = self._partitions.get(batch.tp)
        if entry is None or batch.base_sequence < 0:
            return None
        if code == UNKNOWN_PRODUCER_ID:
            if log_start_offset < 0 or batch.sequence_reset:
                return True
            if entry.last_acked_offset < log_start_offset:
                # retention removed the log's head and the producer's state with it: nothing was lost
                if self.transactional:
                    entry.start_at_beginning(self.producer_id, self.epoch)
                else:
                    self._bump_for.add(batch.tp)
                return True
            if not self.transactional:
                self._bump_for.add(batch.tp)
                return True
            return None
        if code == OUT_OF_ORDER_SEQUENCE_NUMBER:
            if batch.sequence_reset or batch.base_sequence - entry.last_acked != 1:
                return True  # an earlier batch failed or was renumbered: this one goes again after it
            if not self.transactional:
                self._bump_for.add(batch.tp)  # the batch right after the last acknowledged one: a real gap
                return True
        return None

    def split(self, batch: QueuedBatch, pieces: list[QueuedBatch]) -> None:
        """The pieces of a numbered batch (which handed them its sequences) are in flight in its place."""
        entry = self._partitions.get(batch.tp)
        if entry is None or batch.base_sequence < 0:
            return
        entry.remove(batch)
        for piece in pieces:
            insort(entry.in_flight, piece, key=_sequence_key)

    def failed(self, batch: QueuedBatch) -> None:
        """The batch failed for good after it was numbered: close the gap it leaves."""
        entry = self._partitions.get(batch.tp)
        if entry is None or batch.base_sequence < 0:
            return
        entry.remove(batch)
        if not self.transactional:
            self._bump_for.add(batch.tp)
            return
        # Java's adjustSequencesDueToFailedBatch: the later batches move down into the gap
        count = len(batch.records)
        entry.next_sequence = max(entry.next_sequence - count, 0)
        for other in entry.in_flight:
            if other.base_sequence > batch.base_sequence:
                _rewrite(other, other.producer_id, other.producer_epoch, other.base_sequence - count)

    def bump_if_required(self) -> None:
        """Before draining: bump the epoch (idempotent producer) for the partitions that asked for it, and
        renumber their in-flight batches from 0; other partitions follow once their in-flight batches are done."""
        if not self._bump_for or self.transactional or self.producer_id < 0:
            return
        if self.epoch >= _MAX_EPOCH:
            self.producer_id = self.epoch = -1  # a new producer id from InitProducerId, then this bump
            return
        self.epoch += 1
        log.info("bumping the producer epoch to %d (producer id %d) for %s", self.epoch, self.producer_id,
                 ", ".join(map(str, sorted(self._bump_for))))
        for tp in self._bump_for:
            self._entry(tp).start_at_beginning(self.producer_id, self.epoch)
        self._bump_for.clear()


def insert_in_sequence_order(queue: deque[QueuedBatch], batch: QueuedBatch) -> None:
    """Put a batch to be resent back at the front of its partition's queue, after the waiting batches of lower
    sequence (resent ones come back one at a time, not in order)."""
    if batch.base_sequence < 0:
        queue.appendleft(batch)
        return
    ahead = 0
    for waiting in queue:
        if waiting.base_sequence < 0 or waiting.base_sequence >= batch.base_sequence:
            break
        ahead += 1
    queue.insert(ahead, batch)

