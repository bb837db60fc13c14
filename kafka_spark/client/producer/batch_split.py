"""Splitting a batch the broker refused with MESSAGE_TOO_LARGE into smaller ones (no I/O here).

As the Java producer's ``RecordAccumulator.splitAndReenqueue``: the records go again, in order, in batches that
take the place of the refused one. A numbered batch (idempotence) hands its sequences on, the first piece starting
at its base sequence, so the partition's later batches keep theirs. Java rebuilds the pieces at ``batch.size``,
which only helps when compression was underestimated; here each split halves the size, and the producer keeps the
halved size as the topic's batch limit (`size_limit`), so a topic whose ``max.message.bytes`` is far below
``batch.size`` costs a few refusals once rather than for every batch.
"""

from __future__ import annotations

from kafka_spark.client.producer.delivery import BATCH_OVERHEAD, QueuedBatch, queued_size


def size_limit(batch: QueuedBatch, known: int | None) -> int:
    """The batch size estimate to build the refused batch's topic's batches at from now on: half the refused
    batch's (or less, when an earlier refusal set a lower limit)."""
    half = BATCH_OVERHEAD + (batch.size - BATCH_OVERHEAD + 1) // 2
    return half if known is None else min(half, known)


def split(batch: QueuedBatch, limit: int) -> list[QueuedBatch]:
    """Pieces of `batch` (more than one record) in record order, each at most `limit` by the size estimate (a
    larger record alone), and never all records in one piece; a numbered batch's pieces are numbered on from
    its base sequence."""
    records = batch.records
    assert len(records) > 1, "a batch of one record cannot be split"
    pieces: list[QueuedBatch] = []
    piece: QueuedBatch | None = None
    for index, record in enumerate(records):
        size = queued_size(record)
        if piece is None or (piece.records and piece.size + size > limit) or len(piece.records) == len(records) - 1:
            piece = QueuedBatch(batch.tp, batch.created, parent=batch, first=index)
            pieces.append(piece)
        piece.records.append(record)
        piece.size += size
    if batch.base_sequence >= 0:
        sequence = batch.base_sequence
        for piece in pieces:
            piece.producer_id, piece.producer_epoch, piece.base_sequence = \
                batch.producer_id, batch.producer_epoch, sequence
            piece.sequence_reset = batch.sequence_reset
            sequence = (sequence + len(piece.records)) & 0x7FFFFFFF
    batch.pieces = pieces
    batch.encoded = None  # its bytes are not sent again
    return pieces
