"""The records whose values do not parse or decode (sink/checked_values.py): a typed failure, or a Delta
dead-letter table (the design every format shares: sink/dead_letters.py).

The bad records are appended with the same `txnAppId`/`txnVersion` as the main commit and its JSON as
`userMetadata`. A crash between the two commits is repaired when the sink next starts (`reconcile`): the last
batch is read again from Kafka and its bad records written with that batch's `txn` (Delta skips a write whose
`txn` it has already recorded, so two repairs cannot both land).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_spark.delta.batch_again import changes_again
from kafka_spark.delta.txn_append import append_batch_rows, side_table_batch
from kafka_spark.errors import ConfigError
from kafka_spark.sink.dead_letters import DeadLetterValues, repair_needed, same_count, write_again
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.table_names import is_table_name
from kafka_spark.sink.value_schema import require_schema, value_struct
from kafka_spark.spark.versions import require_delta_spark

if TYPE_CHECKING:
    from kafka_spark.sink.change_capture import ChangeCapture
    from kafka_spark.sink.options import KafkaSource, SinkTarget, ValueParsing

def check_options(spark: Any, target: SinkTarget, parsing: ValueParsing) -> None:
    """Refuse a dead-letter table without a schema or that is the table itself, and a DDL Spark cannot parse."""
    require_schema(parsing.dead_letter, parsing.value_schema, parsing.decoded, parsing.changes)
    if parsing.dead_letter is not None:
        if parsing.dead_letter.rstrip("/") == target.table.rstrip("/"):
            raise ConfigError(f"dead_letter {parsing.dead_letter!r} is the table itself; give another table")
        if is_table_name(parsing.dead_letter):
            raise ConfigError(f"dead_letter {parsing.dead_letter!r}: give the dead-letter table's path or URI "
                              "(catalog names are taken for the table only)")
        require_delta_spark(f"dead_letter {parsing.dead_letter!r} (written by Spark's Delta writer)", spark)
    if parsing.value_schema is not None:
        value_struct(spark, parsing.value_schema)


class ParsedValues(DeadLetterValues):
    """A batch's checked records whose bad ones go to a Delta dead-letter table (sink/dead_letters.py)."""

    advice = "Set dead_letter (--dead-letter) to a Delta table to write such records there and load the rest."

    def write(self, commit: SinkCommit) -> None:
        """Append the bad records of `commit`'s batch to the dead-letter table, with the batch's `txn`."""
        assert self.parsing.dead_letter is not None
        append_batch_rows(self.letters(), commit, self.parsing.dead_letter)


def reconcile(spark: Any, source: KafkaSource, target: SinkTarget, parsing: ValueParsing,
              previous: SinkCommit | None, capture: ChangeCapture | None = None) -> None:
    """Write the dead letters of the sink's last batch when a crash came between its commit and theirs."""
    if parsing.dead_letter is None:
        return
    written = side_table_batch(spark, parsing.dead_letter, target.sink_id)
    if not repair_needed(target, parsing, previous, written):
        return
    assert previous is not None
    if capture is not None:  # a change stream's: the events its MERGE could not apply
        changes = changes_again(spark, source, target, parsing, previous, capture)
        try:
            same_count(target, parsing, previous, changes.dead_letters)
            append_batch_rows(changes.dead_letter_rows(), previous, parsing.dead_letter)
        finally:
            changes.release()
        return
    write_again(spark, source, target, parsing, previous, lambda df: ParsedValues(parsing, target.sink_id, df))
