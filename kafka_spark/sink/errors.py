"""Errors of the Kafka -> table sink, whatever the table format."""

from __future__ import annotations

from kafka_spark.errors import KafkaSparkError


class TableLogError(KafkaSparkError):
    """A table's log (or the positions kept beside it) cannot be read, or lacks what the sink's position needs."""


class SinkError(KafkaSparkError):
    """A Kafka-to-table load cannot proceed safely."""


class ConcurrentWriterError(SinkError):
    """Another load wrote the same sink (or the same topic-partitions) of the table at the same time."""


class BatchAlreadyCommittedError(ConcurrentWriterError):
    """The batch was already committed (by `run_id`); this write was skipped, nothing was written twice."""

    def __init__(self, message: str, batch: int, run_id: str) -> None:
        super().__init__(message)
        self.batch = batch
        self.run_id = run_id


class OffsetsMovedBackwardsError(SinkError):
    """The broker's offsets are behind what the table has loaded (topic recreated or truncated)."""


class BadRecordError(SinkError):
    """A record's value does not parse with the value schema and no dead-letter table is set: the first one."""

    def __init__(self, message: str, topic: str, partition: int, offset: int, reason: str, count: int) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = reason
        self.count = count


class UnroutedRecordError(SinkError):
    """A split topic's record whose split value names no table, and the split has no default table."""

    def __init__(self, message: str, topic: str, partition: int, offset: int, value: str | None) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.value = value


class CheckpointMismatchError(SinkError):
    """The query's checkpoint and the table disagree on where the sink's stream stands."""


class ChangeEventError(SinkError):
    """A change stream's record that cannot be applied (an envelope that does not parse, an unknown operation, a
    record without a key): the first one of the batch, by partition and offset; nothing of the batch is committed."""

    def __init__(self, message: str, topic: str, partition: int, offset: int, reason: str) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = reason
