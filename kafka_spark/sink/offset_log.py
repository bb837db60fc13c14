"""A micro-batch's source offsets, from the query's checkpoint offset log (through Hadoop's FileSystem).

`foreachBatch` gets the rows and Spark's batch id, not the offsets the batch covers. Spark writes
`<checkpoint>/offsets/<batchId>` before it runs the batch: `v1`, a line of query metadata, then one
line per source with that source's end offset, here Spark's Kafka JSON `{"topic": {"0": 42}}`. The
previous file holds the batch's start. Reading it through the session's Hadoop FileSystem works on
every store Spark writes checkpoints to.
"""

from __future__ import annotations

import json
import logging

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.sink.errors import SinkError

log = logging.getLogger(__name__)


def read_text(spark, path: str) -> str | None:
    """A small file's text through Hadoop's FileSystem, or None when it does not exist."""
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(hpath):
        return None
    stream = fs.open(hpath)
    try:
        return jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def batch_end_offsets(spark, checkpoint: str, batch_id: int) -> dict[TopicPartition, int] | None:
    """The source's end offsets of micro-batch `batch_id` (the query's only source), None if not logged."""
    text = read_text(spark, f"{checkpoint.rstrip('/')}/offsets/{batch_id}")
    if text is None:
        return None
    lines = text.splitlines()
    if len(lines) < 3 or not lines[0].startswith("v"):
        raise SinkError(f"{checkpoint}/offsets/{batch_id}: not a Spark offset log entry ({len(lines)} lines)")
    if len(lines) > 3:
        raise SinkError(f"{checkpoint}: the query has {len(lines) - 2} sources; the sink's stream reads one")
    raw = json.loads(lines[2])
    if not isinstance(raw, dict):
        raise SinkError(f"{checkpoint}/offsets/{batch_id}: the source offset is not Kafka offsets JSON: {lines[2]}")
    return {TopicPartition(t, int(p)): int(o) for t, parts in raw.items() for p, o in parts.items()}


def fresh_checkpoint(spark, checkpoint: str) -> bool:
    """Whether the query starts afresh: its checkpoint has no micro-batch, or had one it never committed, which
    is then deleted.

    Such a checkpoint would replay that micro-batch from offsets placed again now, over the topics of
    today, while its end was planned over the topics of its day (a topic created since then would look
    deleted). It holds nothing the tables do not: their positions say what that micro-batch committed.
    """
    if batch_end_offsets(spark, checkpoint, 0) is None:
        return True
    if read_text(spark, f"{checkpoint.rstrip('/')}/commits/0") is not None:
        return False
    log.warning("%s has not committed its first micro-batch: starting it afresh from the tables' positions",
                checkpoint)
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(checkpoint)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)
    return True
