"""A change stream's history table: every change of each batch appended beside the current-state table.

The MERGE's commit comes first and says the batch has a history (`SinkCommit.history`); the history rows follow
with the batch's `txn` (txn_append.py). A crash between the two is repaired when the sink next starts: the last
batch's offset ranges are read again from Kafka and its changes appended (Delta skips them if a racing repair
got there first). Only the sink's last batch can lack its history, as every load, stream start and micro-batch
repairs before it commits.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafka_spark.delta.batch_again import changes_again
from kafka_spark.delta.txn_append import append_batch_rows, side_table_batch
from kafka_spark.sink.errors import SinkError
from kafka_spark.sink.position import SinkCommit

if TYPE_CHECKING:
    from kafka_spark.sink.change_capture import ChangeCapture
    from kafka_spark.sink.options import KafkaSource, SinkTarget, ValueParsing

log = logging.getLogger(__name__)


def reconcile_history(spark: Any, source: KafkaSource, target: SinkTarget, parsing: ValueParsing,
                      previous: SinkCommit | None, capture: ChangeCapture | None, topic: str | None) -> None:
    """Append the history of the sink's last batch when a crash came between its commit and its history."""
    history = capture.history_table(topic) if capture is not None else None
    if capture is None or history is None:
        return
    if history.rstrip("/") in (target.table.rstrip("/"), (parsing.dead_letter or "").rstrip("/")):
        raise SinkError(f"cdc_history {history!r} is the table or its dead-letter table; give a table of its own")
    written = side_table_batch(spark, history, target.sink_id)
    last = previous.batch if previous is not None else -1
    if written is not None and written > last:
        raise SinkError(
            f"the history table {history} holds batch {written} of sink {target.sink_id!r}, but {target.table} "
            f"has committed {'no batch' if previous is None else f'up to batch {last}'}: the history table is "
            "shared with another table's sink of the same id. Give each its own sink id or history table.")
    if previous is None or not previous.history or (written is not None and written >= previous.batch):
        return
    log.warning("batch %d of sink %r was committed to %s without its changes in the history table %s (a crash "
                "between the two writes): reading the batch again to append them", previous.batch, target.sink_id,
                target.table, history)
    changes = changes_again(spark, source, target, parsing, previous, capture)
    try:
        assert changes.history is not None
        append_batch_rows(changes.history, previous, history)
    finally:
        changes.release()
