"""The client's only contact with `kafka_spark.records`: decode fetched bytes, encode produced records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.records import decode_to_arrow, encode_produced, encode_produced_records, seal_produced
from kafka_spark.records.column_encoder import Column, Pick, binary_lengths, binary_offsets, layout_columns
from kafka_spark.records.column_encoder import encode_columns as _encode_columns

OutgoingRecord = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]
"""A record queued by the producer: key, value, headers, timestamp (ms). A plain tuple, as `send_many` makes
thousands at a time and the encoder takes it as it is."""


def decode_fetched(data: memoryview, tp: TopicPartition, start: int, end: int,
                   aborted: Sequence[Any] | None, include_headers: bool) -> pa.RecordBatch | None:
    """Records of complete batches in `data` with offsets in [start, end), as Spark's Kafka schema.

    `aborted` (read_committed only) lists the fetch response's aborted transactions; control records
    are never returned.
    """
    pairs = None if aborted is None else [(a["producer_id"], a["first_offset"]) for a in aborted]
    result = decode_to_arrow(data, tp.topic, tp.partition, start_offset=start, end_offset=end, aborted=pairs,
                             isolation="read_uncommitted" if aborted is None else "read_committed",
                             include_headers=include_headers)
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


def encode_columns(keys: Column | None, values: Column, timestamp_deltas: Any, base_timestamp: int,
                   max_timestamp: int, compression: str, lengths: tuple[Any, Any] | None = None,
                   picks: Sequence[Pick] | None = None) -> bytearray | memoryview:
    """`encode_unsealed` for records given as binary columns or pieces of them (`keys` None: null keys), `picks`
    the rows of each piece to take in order (None: all), with their timestamps' deltas (None: all 0); `lengths`:
    the picked keys' and values' `column_lengths`, when known."""
    return _encode_columns(keys, values, timestamp_deltas, base_timestamp, max_timestamp,
                           None if compression == "none" else compression, lengths, picks)


def seal_records(unsealed: bytearray | memoryview, producer_id: int, producer_epoch: int, base_sequence: int,
                 transactional: bool = False) -> bytearray | memoryview:
    """An `encode_unsealed` batch completed in place: the same bytes `encode_records` gives."""
    return seal_produced(unsealed, producer_id, producer_epoch, base_sequence, transactional)
