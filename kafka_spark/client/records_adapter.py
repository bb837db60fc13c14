"""The client's only contact with `kafka_spark.records`: decode fetched bytes, encode produced records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.protocol.primitives import ByteRuns
from kafka_spark.records import decode_to_arrow, encode_produced, encode_produced_records, seal_produced
from kafka_spark.records.column_encoder import Column, Pick, binary_lengths, binary_offsets, layout_columns
from kafka_spark.records.column_encoder import frame_records as _frame_records
from kafka_spark.records.column_encoder import lay_out_records as _lay_out_records

Unsealed = bytearray | memoryview | ByteRuns
"""A batch's bytes as the encoders give them: one buffer, or runs of them (the header first) that a Produce request
writes by reference."""

OutgoingRecord = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]
"""A record queued by the producer: key, value, headers, timestamp (ms). A plain tuple, as `send_many` makes
thousands at a time and the encoder takes it as it is."""


def decode_fetched(data: memoryview, tp: TopicPartition, start: int, end: int,
                   aborted: Sequence[Any] | None, include_headers: bool, views: bool = False) -> pa.RecordBatch | None:
    """Records of complete batches in `data` with offsets in [start, end), as Spark's Kafka schema.

    `aborted` (read_committed only) lists the fetch response's aborted transactions; control records
    are never returned.
    """
    pairs = None if aborted is None else [(a["producer_id"], a["first_offset"]) for a in aborted]
    result = decode_to_arrow(data, tp.topic, tp.partition, start_offset=start, end_offset=end, aborted=pairs,
                             isolation="read_uncommitted" if aborted is None else "read_committed",
                             include_headers=include_headers, views=views)
    return result.batch


def encode_records(records: Sequence[OutgoingRecord], compression: str, producer_id: int, producer_epoch: int,
                   base_sequence: int, transactional: bool = False) -> bytearray:
    """One v2 record batch (base offset 0) holding `records`, marked transactional when it belongs to one."""
    return encode_produced(records, None if compression == "none" else compression, producer_id, producer_epoch,
                           base_sequence, transactional)


def encode_unsealed(records: Sequence[OutgoingRecord], compression: str) -> bytearray:
    """`records` as a v2 record batch still without its producer fields and CRC (`seal_records` adds them)."""
    return encode_produced_records(records, None if compression == "none" else compression)


def column_offsets(column: pa.Array) -> Any:
    """A binary column's item offsets in its data buffer (int64, one more than its length)."""
    return binary_offsets(column)


def column_lengths(column: pa.Array) -> Any:
    """Each item's byte length in a binary column (int64, -1 for a null)."""
    return binary_lengths(column)


def encoding_columns(keys: pa.Array | None, values: pa.Array) -> tuple[pa.Array | None, pa.Array]:
    """Key and value columns as `encode_columns` best picks rows of them for many batches."""
    return layout_columns(keys, values)


def lay_out_records(keys: Column | None, values: Column, timestamp_deltas: Any, offset_deltas: Any,
                    lengths: tuple[Any, Any], picks: Sequence[Pick]) -> tuple[memoryview, Any]:
    """The bytes of records given as binary columns or pieces of them (`keys` None: null keys), `picks` the rows
    of each piece to take in order, as in a v2 batch with these offset deltas and timestamp deltas (None: all
    0); `lengths`: the picked keys' and values' `column_lengths`. Also each record's size (int64)."""
    return _lay_out_records(keys, values, timestamp_deltas, offset_deltas, lengths, picks)


def frame_records(laid: Sequence[memoryview], count: int, base_timestamp: int, max_timestamp: int,
                  compression: str) -> Unsealed:
    """`encode_unsealed` for `count` records laid out by `lay_out_records` (offset deltas 0 .. count - 1, their
    timestamps' deltas from `base_timestamp`), in pieces."""
    return _frame_records(laid, count, base_timestamp, max_timestamp, None if compression == "none" else compression)


def seal_records(unsealed: Unsealed, producer_id: int, producer_epoch: int, base_sequence: int,
                 transactional: bool = False) -> Unsealed:
    """An `encode_unsealed` batch completed in place: the same bytes `encode_records` gives."""
    return seal_produced(unsealed, producer_id, producer_epoch, base_sequence, transactional)
