"""The unit of work of one Spark task: one topic-partition's offset range, read from its leader."""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition

from kafka_spark.offsets.ranges import OffsetRange


class KafkaInputPartition(InputPartition):
    """Plain picklable data: topic, partition, [start, end) and the leader's broker id as a hint."""

    def __init__(self, r: OffsetRange) -> None:
        super().__init__((r.topic, r.partition, r.start, r.end, r.leader))
        self.range = r

    def __repr__(self) -> str:
        r = self.range
        return f"KafkaInputPartition({r.topic}-{r.partition} [{r.start}, {r.end}) leader={r.leader})"
