"""A batch read given its planned ranges (the Delta load's) reads them as they are, without planning again."""

from __future__ import annotations

from kafka_spark.offsets import OffsetRange
from kafka_spark.spark.datasource import KafkaDataSource


def test_planned_ranges_become_the_tasks_without_a_broker():
    # Nothing listens on port 9: planning again would fail.
    source = KafkaDataSource({"kafka.bootstrap.servers": "127.0.0.1:9", "assign": '{"t":[0,1]}',
                              "startingOffsets": '{"t":{"0":3,"1":0}}', "endingOffsets": '{"t":{"0":8,"1":2}}',
                              "plannedRanges": '[["t",0,3,8,1],["t",1,0,2,null]]'})
    source.schema()
    tasks = source.reader(None).partitions()
    assert [task.range for task in tasks] == [OffsetRange("t", 0, 3, 8, 1), OffsetRange("t", 1, 0, 2)]
