"""Kafka's on-disk logs: the only code that reads log directories, segments, indexes and checkpoints.

Start with `list_partitions(log_dir)` and `PartitionLog.open(partition_dir)`; `Segment` reads one
segment; the parsers take bytes. Records decode through `kafka_spark.records`, the same decoder as
fetch responses. Paths may be local, or URIs read through pyarrow.fs (`s3a://` is read as `s3://`).
"""

from kafka_spark.segments.checkpoints import EpochEntry, parse_leader_epochs, parse_offset_checkpoint
from kafka_spark.segments.chunks import Chunk, ScanStats, scan_chunks
from kafka_spark.segments.deep import DeepRecord, deep_records
from kafka_spark.segments.errors import CheckpointError, IndexCorruptError, SegmentCorruptError, SnapshotCorruptError
from kafka_spark.segments.indexes import OffsetIndex, TimeIndex, offset_index, time_index
from kafka_spark.segments.listing import PartitionDir, SegmentFiles, SegmentListing, list_segments
from kafka_spark.segments.logdir import LogDirCheckpoints, list_partitions, read_checkpoints
from kafka_spark.segments.names import offset_from_name, parse_partition_dir, segment_file_name
from kafka_spark.segments.partition import PartitionLog
from kafka_spark.segments.read import read_segment
from kafka_spark.segments.segment import Segment
from kafka_spark.segments.snapshot import ProducerEntry, read_snapshot
from kafka_spark.segments.storage import LocalStorage, Source, Storage, resolve
from kafka_spark.segments.txnindex import AbortedTxn, aborted_between, read_txn_index

__all__ = [
    "AbortedTxn",
    "CheckpointError",
    "Chunk",
    "DeepRecord",
    "EpochEntry",
    "IndexCorruptError",
    "LocalStorage",
    "LogDirCheckpoints",
    "OffsetIndex",
    "PartitionDir",
    "PartitionLog",
    "ProducerEntry",
    "ScanStats",
    "Segment",
    "SegmentCorruptError",
    "SegmentFiles",
    "SegmentListing",
    "SnapshotCorruptError",
    "Source",
    "Storage",
    "TimeIndex",
    "aborted_between",
    "deep_records",
    "list_partitions",
    "list_segments",
    "offset_from_name",
    "offset_index",
    "parse_leader_epochs",
    "parse_offset_checkpoint",
    "parse_partition_dir",
    "read_checkpoints",
    "read_segment",
    "read_snapshot",
    "read_txn_index",
    "resolve",
    "scan_chunks",
    "segment_file_name",
    "time_index",
]
