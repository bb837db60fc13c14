"""The producer's sender thread: drains sealed batches into Produce requests, keeps up to
``max.in.flight.requests.per.connection`` of them unanswered per broker, retries retriable errors after a metadata
refresh until ``delivery.timeout.ms``, and resolves the batches' futures.

A request holds at most one batch per partition; the next batch of a partition may go in the next request while the
first is unanswered (the connection answers requests in order). What that means for order, as in the Java producer:

- ``max.in.flight.requests.per.connection=1``: a partition has at most one batch in flight, so a retried batch is
  written before the batches after it;
- idempotence (at most 5 in flight): the broker takes a partition's batches only in sequence order and drops
  duplicates; after an error the sender resends in sequence order (`client/producer/sequences.py`), so order is kept and
  retries write nothing twice;
- no idempotence and more than one in flight: a retried batch can be written after batches sent after it, so a
  partition's records may be reordered (and, as with any retry without idempotence, duplicated).

A batch of several records that the broker refuses as larger than the topic's ``max.message.bytes``
(MESSAGE_TOO_LARGE) is split and its pieces go again in its place, in the same order (`client/producer/batch_split.py`);
a record alone in its batch fails with `MessageTooLargeError`.

`Producer` (producer.py) is the caller's side: it fills and seals the batches this side sends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.errors import ProducerError, TransactionFencedError
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.net.connection import BrokerConnection, InFlight
from kafka_spark.client.net.retry import Backoff, is_retriable, retries_end_within
from kafka_spark.client.producer import batch_split
from kafka_spark.client.producer.delivery import QueuedBatch
from kafka_spark.client.producer.partitioner import StickyPartitioner
from kafka_spark.client.producer.sequences import Sequences, insert_in_sequence_order
from kafka_spark.client.producer.transactions import FENCED_CODES, PRODUCE_MAX_VERSION, Transactions
from kafka_spark.client.records_adapter import seal_records
from kafka_spark.errors import BrokerError, KafkaConnectionError, KafkaSparkError
from kafka_spark.errors.codes import broker_error
from kafka_spark.protocol import ApiKey

# under the producer's name: one logger for the whole producer, as users configure it
log = logging.getLogger("kafka_spark.client.producer.producer")

MESSAGE_TOO_LARGE = 10
DUPLICATE_SEQUENCE_NUMBER = 46


class PendingProduce:
    """A Produce request written to a broker and not yet answered."""

    __slots__ = ("batches", "conn", "handle", "node", "sent")

    def __init__(self, node: int, conn: BrokerConnection, handle: InFlight, batches: list[QueuedBatch]) -> None:
        self.node, self.conn, self.handle, self.batches = node, conn, handle, batches
        self.sent = time.monotonic()


class _Pass:
    """What one look at the waiting batches found to do outside the lock: partitions to add to the transaction,
    a producer id to fetch, and the first waiting batch of each partition that may go, with its leader (None:
    look it up)."""

    __slots__ = ("candidates", "join", "need_producer_id", "oldest")

    def __init__(self, oldest: float) -> None:
        self.candidates: list[tuple[QueuedBatch, int | None]] = []
        self.join: list[TopicPartition] = []
        self.need_producer_id = False
        self.oldest = oldest  # when the oldest waiting batch was made: lookups end at its delivery timeout

    def __bool__(self) -> bool:
        return bool(self.candidates or self.join or self.need_producer_id)


class BatchSender:
    """The sending half of a producer; its state is set up by `Producer.__init__`.

    Only the sender thread sends and receives; `_ready` (sealed batches, a queue per partition), `_seq` and
    `_muted` change under `_cond`, `_requests` (unanswered requests per broker, oldest first) only in the
    sender thread."""

    cluster: Cluster
    config: ClientConfig
    _partitioner: StickyPartitioner
    _batches: dict[TopicPartition, QueuedBatch]
    _ready: dict[TopicPartition, deque[QueuedBatch]]
    _requests: dict[int, deque[PendingProduce]]
    _muted: set[TopicPartition]
    _size_caps: dict[str, int]
    _drain_from: int
    _cond: threading.Condition
    _closed: bool
    _unsent: int
    _buffered: int
    _room_waiters: int
    _max_age: float
    _backoff: Backoff
    _seq: Sequences | None
    _txn: Transactions | None
    _txn_error: BaseException | None
    _sender_error: BaseException | None

    def _seal(self, batch: QueuedBatch, topic: str) -> None:
        # called with the lock held: the batch stops taking records and is queued for sending
        if self._batches.get(batch.tp) is batch:
            del self._batches[batch.tp]
        queue = self._ready.get(batch.tp)
        if queue is None:
            queue = self._ready[batch.tp] = deque()
        queue.append(batch)
        if self.config.batch_size:
            # Under the lock: the cache only, never a network lookup.
            info = self.cluster.metadata.topic(topic)
            count = len(info.partitions) if info is not None and info.partitions else batch.tp.partition + 1
            self._partitioner.batch_completed(topic, count)

    # ---- the loop ----------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    found = self._look(time.monotonic())
                    if not found and not self._requests:
                        if self._closed and not self._batches and not self._ready:
                            return
                        self._cond.wait(self._wait_time())
                        continue
                if found and self._act(found):
                    continue
                if self._requests:
                    # Nothing more can go now: wait for the oldest answer, which frees room or a partition.
                    self._receive_oldest()
                else:
                    with self._cond:
                        self._cond.wait(self._wait_time())
        except BaseException as exc:
            log.exception("producer sender failed")
            self._sender_error = exc
            error = ProducerError(f"the producer's sender stopped: {exc}")
            with self._cond:
                batches = [*(b for q in self._ready.values() for b in q), *self._batches.values(),
                           *(b for q in self._requests.values() for r in q for b in r.batches)]
                self._ready.clear()
                self._batches.clear()
                self._requests.clear()
            for batch in batches:
                self._finish(batch, error=error)

    def _wait_time(self) -> float:
        now = time.monotonic()
        linger = self.config.linger_ms / 1000
        times = [] if self._room_waiters else [b.created + linger - now for b in self._batches.values()]
        times += [q[0].retry_at - now for q in self._ready.values()]
        return max(min(times, default=0.5), 0.001)

    def _look(self, now: float) -> _Pass:
        """Under the lock: seal lingered batches and find the partitions whose first waiting batch may go."""
        linger = self.config.linger_ms / 1000
        if not self._room_waiters:  # a caller waiting for room has records for them (Producer._wait_for_room)
            for batch in list(self._batches.values()):
                if now - batch.created >= linger:
                    self._seal(batch, batch.tp.topic)
        # A transaction's partitions join it as soon as they have records, as Java's do: by the time their first
        # batch is ready the AddPartitionsToTxn round trip is over rather than ahead of it.
        found = _Pass(min((q[0].created for q in self._ready.values()), default=now))
        if self._txn is not None:
            found.join = [tp for tp in self._batches if tp not in self._txn.partitions]
        if not self._ready:
            return found
        seq = self._seq
        if seq is not None:
            seq.bump_if_required()
            if seq.producer_id < 0 and self._txn is None:
                found.need_producer_id = True
                return found
        tps = list(self._ready)
        # a different first partition each time, so a full request does not always leave out the same ones
        start = self._drain_from % len(tps)
        self._drain_from += 1
        caps = self._size_caps
        for tp in tps[start:] + tps[:start]:
            batch = self._ready[tp][0]
            if tp in self._muted or batch.retry_at > now:
                continue  # an answer is awaited (one in flight at most), or a retry backs off
            cap = caps.get(tp.topic) if caps else None
            if cap is not None and batch.size > cap and batch.base_sequence < 0 and len(batch.records) > 1:
                # made before its topic's limit was learnt: split before it is refused (never a numbered batch,
                # whose earlier attempt may have been appended)
                batch = self._split(batch, cap)
            if seq is not None and not seq.may_send(batch):
                continue
            if self._txn is not None and tp not in self._txn.partitions:
                if tp not in found.join:
                    found.join.append(tp)  # AddPartitionsToTxn before its first batch
                continue
            found.candidates.append((batch, self._cached_leader(tp, now)))
        return found

    def _cached_leader(self, tp: TopicPartition, now: float) -> int | None:
        info = self.cluster.metadata.topic(tp.topic)
        if info is None or info.error_code or now - info.updated > self._max_age:
            return None
        part = info.partitions.get(tp.partition)
        return part.leader if part is not None and part.leader >= 0 else None

    def _act(self, found: _Pass) -> bool:
        """Outside the lock: fetch a producer id, add partitions to the transaction, look up leaders, then send a
        request to every leader with room. False when nothing could be done."""
        # Metadata, producer-id and transaction lookups retry until default.api.timeout.ms; the oldest batch
        # may have less.
        with retries_end_within(self.config.delivery_timeout_ms / 1000 - (time.monotonic() - found.oldest)):
            if found.need_producer_id:
                self._init_producer_id()
                return True
            done = False
            if found.join:
                self._join_transaction(found.join)
                done = True
            routed: list[tuple[QueuedBatch, int]] = []
            for batch, leader in found.candidates:
                if leader is None:
                    try:
                        leader = self.cluster.leader(batch.tp).leader
                    except KafkaSparkError as exc:
                        with self._cond:
                            self._unqueue(batch)
                        self._failed(batch, exc)
                        done = True
                        continue
                routed.append((batch, leader))
        with self._cond:
            groups = self._take(routed)
        for node, group in groups.items():
            self._send(node, group)
        return done or bool(groups)

    def _take(self, routed: Iterable[tuple[QueuedBatch, int]]) -> dict[int, list[QueuedBatch]]:
        """Under the lock: the batches of one request per leader with room (one per partition, up to
        max.request.size), taken off their queues and numbered when idempotent."""
        limit = self.config.max_in_flight
        groups: dict[int, list[QueuedBatch]] = {}
        sizes: dict[int, int] = {}
        for batch, node in routed:
            if len(self._requests.get(node, ())) >= limit:
                continue
            size = batch.size if batch.encoded is None else len(batch.encoded)
            used = sizes.get(node, 0)
            if used and used + size > self.config.max_request_size:
                continue  # for the next request (one batch alone always goes)
            self._unqueue(batch)
            if self._seq is not None:
                self._seq.assign(batch)
            if limit == 1:
                self._muted.add(batch.tp)  # the next batch of the partition waits for this one's answer
            sizes[node] = used + size
            groups.setdefault(node, []).append(batch)
        return groups

    def _unqueue(self, batch: QueuedBatch) -> None:
        # under the lock: take the first waiting batch of its partition off the queue
        queue = self._ready[batch.tp]
        assert queue[0] is batch
        queue.popleft()
        if not queue:
            del self._ready[batch.tp]

    def _send(self, node: int, group: list[QueuedBatch]) -> None:
        try:
            conn = self.cluster.connection(node)
            version = None if self._txn is None else min(conn.version(ApiKey.PRODUCE), PRODUCE_MAX_VERSION)
            handle = conn.send(ApiKey.PRODUCE, self._produce_body(group), version)
        except KafkaSparkError as exc:
            for batch in group:
                self._failed(batch, exc)
            return
        if self.config.acks == 0:
            self._complete(group, {})  # no answer comes
            return
        requests = self._requests.get(node)
        if requests is None:
            requests = self._requests[node] = deque()
        requests.append(PendingProduce(node, conn, handle, group))

    def _receive_oldest(self) -> None:
        # Each connection answers in order; across brokers, the request sent first is awaited first.
        node = min(self._requests, key=lambda n: self._requests[n][0].sent)
        requests = self._requests[node]
        request = requests.popleft()
        if not requests:
            del self._requests[node]
        try:
            response = request.conn.receive(request.handle)
        except KafkaSparkError as exc:
            for batch in request.batches:
                self._failed(batch, exc)
            return
        self._complete(request.batches, response)

    # ---- requests and answers ------------------------------------------------------------------

    def _join_transaction(self, tps: list[TopicPartition]) -> None:
        # AddPartitionsToTxn before the first batch to a partition; a refusal fails their batches (not the sender)
        assert self._txn is not None
        try:
            self._txn.add_partitions(tps)
        except KafkaSparkError as exc:
            with self._cond:
                for tp in tps:  # an open batch of the partition too: it would only ask again
                    open_batch = self._batches.get(tp)
                    if open_batch is not None:
                        self._seal(open_batch, tp.topic)
                batches = [b for tp in tps for b in self._ready.pop(tp, ())]
            for batch in batches:
                self._give_up(batch, exc)

    def _produce_body(self, group: Iterable[QueuedBatch]) -> dict[str, Any]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for batch in group:
            batch.attempts += 1
            if batch.encoded is None:
                unsealed = batch.unsealed
                if unsealed is None:
                    unsealed = batch.records.encode_unsealed(self.config.compression_type)
                batch.encoded = seal_records(unsealed, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                             self._txn is not None)
                batch.sequence_reset = False
            topics.setdefault(batch.tp.topic, []).append({"index": batch.tp.partition, "records": batch.encoded})
        return {
            "transactional_id": None if self._txn is None else self._txn.transactional_id,
            "acks": self.config.acks, "timeout_ms": self.config.request_timeout_ms,
            "topic_data": [{"name": t, "topic_id": self.cluster.metadata.topic_id(t), "partition_data": ps}
                           for t, ps in topics.items()],
        }

    def _complete(self, group: list[QueuedBatch], response: Mapping[str, Any]) -> None:
        if self.config.acks == 0:
            for batch in group:
                self._finish(batch, base_offset=-1)
            return
        answers: dict[TopicPartition, Mapping[str, Any]] = {}
        for topic in response.get("responses", ()):
            name = topic.get("name") or self.cluster.metadata.topic_name(topic.get("topic_id"))
            if name is None:
                continue  # a topic id this client does not know: no batch can claim its answers
            for p in topic["partition_responses"]:
                answers[TopicPartition(name, p["index"])] = p
        for batch in group:
            p = answers.get(batch.tp)
            if p is None:
                self._failed(batch, ProducerError(f"the Produce response has no answer for {batch.tp}"))
                continue
            code = p["error_code"]
            if code == DUPLICATE_SEQUENCE_NUMBER or not code:
                # appended now, or (a duplicate) by an earlier attempt whose answer was lost
                if self._seq is not None:
                    with self._cond:
                        self._seq.completed(batch, p["base_offset"])
                self._finish(batch, base_offset=p["base_offset"], append_time=p.get("log_append_time_ms", -1))
                continue
            if code == MESSAGE_TOO_LARGE and len(batch.records) > 1:
                with self._cond:
                    self._split(batch, batch_split.size_limit(batch, self._size_caps.get(batch.tp.topic)))
                continue
            if code == MESSAGE_TOO_LARGE:
                self._give_up(batch, _too_large(batch, p.get("error_message")))
                continue
            if self._txn is not None and code in FENCED_CODES:
                self._failed(batch, TransactionFencedError(
                    self._txn.transactional_id, f"Produce {batch.tp} was refused: a newer producer initialised "
                                                "this transactional id"))
                continue
            self._failed(batch, broker_error(code, f"Produce {batch.tp}", p.get("error_message")), code,
                         p.get("log_start_offset", -1))

    def _failed(self, batch: QueuedBatch, error: BaseException, code: int | None = None,
                log_start_offset: int = -1) -> None:
        """Retry the batch (back in its partition's queue, in sequence order) or fail it for good."""
        verdict = None
        if self._seq is not None:
            with self._cond:
                verdict = self._seq.can_retry(batch, code, log_start_offset)
        age = time.monotonic() - batch.created
        if (is_retriable(error) if verdict is None else verdict) and batch.attempts <= self.config.retries and \
                age < self.config.delivery_timeout_ms / 1000:
            log.info("%s: produce failed (%s); retrying", batch.tp, error)
            self.cluster.on_retriable(error)
            if isinstance(error, KafkaConnectionError):
                self.cluster.metadata.invalidate()
            batch.retry_at = time.monotonic() + self._backoff.delay(max(batch.attempts, 1))
            with self._cond:
                queue = self._ready.get(batch.tp)
                if queue is None:
                    queue = self._ready[batch.tp] = deque()
                if self._seq is not None:
                    insert_in_sequence_order(queue, batch)
                else:
                    queue.appendleft(batch)  # ahead of the partition's waiting batches (not of those in flight)
                self._muted.discard(batch.tp)
                self._cond.notify_all()
            return
        self._give_up(batch, error)

    def _split(self, batch: QueuedBatch, limit: int) -> QueuedBatch:
        """Under the lock: put the pieces of `batch` (refused as too large, or larger than its topic's learnt
        limit) first in its partition's queue, in its place, and build the topic's batches at `limit` from now
        on. Returns the first piece."""
        self._size_caps[batch.tp.topic] = limit
        pieces = batch_split.split(batch, limit)
        log.info("%s: splitting a batch of %d records (about %d bytes) into %d below %d bytes, the topic's "
                 "max.message.bytes being lower", batch.tp, len(batch.records), batch.size, len(pieces), limit)
        self._buffered += sum(p.size for p in pieces) - batch.size
        queue = self._ready.get(batch.tp)
        if queue is None:
            queue = self._ready[batch.tp] = deque()
        if queue and queue[0] is batch:
            queue.popleft()
        if self._seq is not None and batch.base_sequence >= 0:
            self._seq.split(batch, pieces)
            for piece in pieces:
                insert_in_sequence_order(queue, piece)
        else:
            queue.extendleft(reversed(pieces))
        self._muted.discard(batch.tp)
        self._cond.notify_all()
        return pieces[0]

    def _give_up(self, batch: QueuedBatch, error: BaseException) -> None:
        if self._seq is not None:
            with self._cond:
                self._seq.failed(batch)
        self._finish(batch, error=error)

    def _finish(self, batch: QueuedBatch, base_offset: int = -1, append_time: int = -1,
                error: BaseException | None = None) -> None:
        if error is not None and self._txn is not None and self._txn_error is None:
            self._txn_error = error  # the transaction cannot commit now
        batch.resolve(base_offset, append_time, error)
        batch.encoded = batch.unsealed = None  # its bytes are not sent again: not kept while callers hold it
        with self._cond:
            self._muted.discard(batch.tp)
            self._unsent -= len(batch.records)
            self._buffered -= batch.size
            self._cond.notify_all()

    def _init_producer_id(self) -> None:
        # an idempotent producer's id and epoch, before its first batch; a failure fails the waiting batches
        def attempt(_: int) -> dict[str, Any]:
            conn = self.cluster.any_connection()
            response = conn.request(ApiKey.INIT_PRODUCER_ID, {
                "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1})
            if response["error_code"]:
                raise broker_error(response["error_code"], "InitProducerId")
            return response

        assert self._seq is not None
        try:
            response = self.cluster.retry("InitProducerId", attempt)
        except KafkaSparkError as exc:
            with self._cond:
                batches = [b for q in self._ready.values() for b in q]
                self._ready.clear()
            for batch in batches:
                self._give_up(batch, exc)
            return
        with self._cond:
            self._seq.set_producer(response["producer_id"], response["producer_epoch"])


def _too_large(batch: QueuedBatch, message: str | None) -> BrokerError:
    # one record the topic refuses however it is batched: say which, how big, and the broker's words on the limit
    size = batch.size if batch.encoded is None else len(batch.encoded)
    text = (f"a record for partition {batch.tp.partition} of topic {batch.tp.topic} makes a batch of {size} "
            "bytes, more than the topic's max.message.bytes")
    return broker_error(MESSAGE_TOO_LARGE, f"Produce {batch.tp}", f"{text}: {message}" if message else text)
