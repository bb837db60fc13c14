"""A change stream's batch applied without Spark's Delta writer: delta-rs's MERGE, the offsets in the same commit.

The batch's last change per key (delta/changes.py, computed in Spark) is collected to the driver as Arrow (one
row per changed key, not per record) and merged by delta-rs: a delete where the change deletes, an update or an
insert otherwise, every other row deleted after a truncate, new columns added (`merge_schema`). The commit
carries the sink's application transaction (`kafka-spark/<sink id>`, the batch number) and the batch's JSON as
`userMetadata`, exactly as Spark's MERGE does through its session confs, so delta/position.py resumes from it
and a re-run of a committed batch changes nothing: delta-rs does not skip it by its transaction as Delta on Spark
does, so the table's recorded batch is checked first.

Column names are double-quoted in delta-rs's predicates (its SQL folds unquoted names to lower case).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kafka_spark.delta.changes import BatchChanges, merge_clauses
from kafka_spark.delta.errors import DeltaLogError
from kafka_spark.sink.errors import ConcurrentWriterError
from kafka_spark.sink.position import SinkCommit, app_id, now_ms

if TYPE_CHECKING:
    from kafka_spark.delta.location import TableLocation


def table_schema(location: TableLocation) -> Any:
    """The table's schema as a Spark StructType, read by delta-rs (Delta's schema JSON is Spark's)."""
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(_table(location).schema().to_json()))


def merge_changes(changes: BatchChanges, location: TableLocation, commit: SinkCommit) -> None:
    """MERGE the batch's last change per key into the table, with `commit`, in one delta-rs commit."""
    from deltalake.exceptions import CommitFailedError

    properties = _properties(commit)
    table = _table(location)
    recorded = table.transaction_version(app_id(commit.sink_id))
    if recorded is not None and recorded >= commit.batch:
        # Delta on Spark skips such a MERGE by its `txn`; delta-rs would apply it again: the caller then finds
        # the run whose commit holds the batch (BatchAlreadyCommittedError), and nothing is applied twice.
        return
    try:
        if changes.records == 0:
            # An empty batch still moves the position: a commit of its transaction marker alone.
            table.create_write_transaction([], "append", table.schema(), commit_properties=properties)
            return
        c = merge_clauses(changes, _quoted)
        version = table.version()
        merge = table.merge(source=changes.to_arrow(), predicate=c.on, source_alias="s", target_alias="t",
                            merge_schema=True, commit_properties=properties)
        if c.marks is not None:
            merge = merge.when_matched_update(updates=c.marks, predicate=c.delete_when)
        else:
            merge = merge.when_matched_delete(predicate=c.delete_when)
        if c.updates:
            merge = merge.when_matched_update(updates=c.updates, predicate=c.update_when)
        merge = merge.when_not_matched_insert(updates=c.values, predicate=c.insert_when)
        if changes.truncated and c.truncate_marks is not None:
            merge = merge.when_not_matched_by_source_update(updates=c.truncate_marks)
        elif changes.truncated:
            merge = merge.when_not_matched_by_source_delete()
        merge.execute()  # moves `table` to the version it commits
        if table.version() == version:
            # delta-rs commits nothing for a MERGE that changes no row (every change older than its row, a replay):
            # the position still has to move, with a commit of the transaction marker alone
            table.create_write_transaction([], "append", table.schema(), commit_properties=properties)
    except CommitFailedError as exc:
        raise _conflict(location, commit, exc) from None


def append_changes(changes: BatchChanges, location: TableLocation, partition_by: tuple[str, ...],
                   commit: SinkCommit) -> None:
    """The table's first commit: the rows the batch leaves, with `commit` (a table nobody has created yet)."""
    from deltalake import write_deltalake
    from deltalake.exceptions import CommitFailedError

    rows = changes.left_arrow()
    try:
        write_deltalake(location.delta_rs_uri or location.path, rows, mode="error",
                        partition_by=list(partition_by) or None,
                        storage_options=dict(location.storage_options) or None,
                        commit_properties=_properties(commit))
    except (CommitFailedError, FileExistsError) as exc:
        raise _conflict(location, commit, exc) from None
    except Exception as exc:
        if "already exists" in str(exc).lower():
            raise _conflict(location, commit, exc) from None
        raise


def _properties(commit: SinkCommit) -> Any:
    from deltalake import CommitProperties, Transaction

    return CommitProperties(custom_metadata={"userMetadata": commit.to_json()},
                            app_transactions=[Transaction(app_id(commit.sink_id), commit.batch, now_ms())])


def _table(location: TableLocation) -> Any:
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        return DeltaTable(location.delta_rs_uri or location.path, storage_options=dict(location.storage_options)
                          or None)
    except DeltaError as exc:
        raise DeltaLogError(f"{location}: the Delta table cannot be read: {exc}") from None


def _conflict(location: TableLocation, commit: SinkCommit, exc: Exception) -> ConcurrentWriterError:
    return ConcurrentWriterError(
        f"another writer committed to {location} for sink {commit.sink_id!r} at the same time; this run's batch "
        f"{commit.batch} was not applied ({str(exc)[:200]}). Run one load per sink and table at a time.")


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'
