"""Kafka's log formats: v0/v1 message sets and v2 record batches, compression, CRC, and a
vectorised decoder straight to Arrow with Spark's Kafka schema.

No I/O here: bytes in, values out.
"""

from kafka_spark.records.arrow import kafka_schema
from kafka_spark.records.constants import Compression, ControlType, TimestampType
from kafka_spark.records.decoder import Decoder, DecodeResult, decode_to_arrow
from kafka_spark.records.encoder import (
    encode_batch,
    encode_control_batch,
    encode_produced,
    encode_produced_records,
    seal_produced,
)
from kafka_spark.records.iterate import BatchScan, iter_batches, iter_records, scan_batches
from kafka_spark.records.model import BatchInfo, ControlMarker, Record, RecordData

__all__ = [
    "BatchInfo",
    "BatchScan",
    "Compression",
    "ControlMarker",
    "ControlType",
    "DecodeResult",
    "Decoder",
    "Record",
    "RecordData",
    "TimestampType",
    "decode_to_arrow",
    "encode_batch",
    "encode_control_batch",
    "encode_produced",
    "encode_produced_records",
    "iter_batches",
    "iter_records",
    "kafka_schema",
    "scan_batches",
    "seal_produced",
]
