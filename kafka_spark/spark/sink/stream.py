"""`df.writeStream.format("pykafka")`: each micro-batch's tasks produce their rows — at-least-once, or with
`exactlyOnce=true` in Kafka transactions the driver commits with the batch, a replayed batch skipped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from kafka_spark.spark.sink.options import SinkOptions
from kafka_spark.spark.sink.rows import serialised
from kafka_spark.spark.sink.writer import KafkaCommitMessage, end_task_transactions, partition_id, write_at_least_once
from kafka_spark.spark.worker_setup import prepare_worker

if TYPE_CHECKING:
    import pyarrow as pa

# Spark's local properties of a micro-batch's tasks
QUERY_ID = "sql.streaming.queryId"
BATCH_ID = "streaming.sql.batchId"


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Writes each micro-batch to Kafka; the driver ends the batch's transactions in `commit` / `abort`."""

    def __init__(self, options: SinkOptions) -> None:
        # Picklable options only: producers open in write(), on the executors.
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        prepare_worker()
        if not self.options.exactly_once:
            return write_at_least_once(self.options, iterator)
        from pyspark import TaskContext

        from kafka_spark.spark.sink.transactions import BatchMark, transactional_id, write_in_transaction

        context = TaskContext.get()
        assert context is not None, "called outside a Spark task"
        query_id, batch_id = context.getLocalProperty(QUERY_ID), context.getLocalProperty(BATCH_ID)
        if query_id is None or batch_id is None:
            raise RuntimeError(f"a micro-batch task without Spark's {QUERY_ID} / {BATCH_ID} properties")
        # The query id survives restarts from the same checkpoint, so a replayed batch reuses its task's ids.
        prefix = self.options.transactional_id_prefix or f"pykafka-{query_id}"
        mark = BatchMark(query_id, int(batch_id))
        iterator = serialised(iterator, self.options.payloads, self.options.topic)
        outcome = write_in_transaction(self.options, transactional_id(prefix, partition_id()), iterator, mark)
        return KafkaCommitMessage.of(outcome)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        end_task_transactions(self.options, messages, commit=True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        end_task_transactions(self.options, messages, commit=False)
