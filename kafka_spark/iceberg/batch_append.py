"""One batch's rows and position appended to an Iceberg table in one snapshot, exactly once.

pyiceberg's writer (`append_batch`) writes the data files from Arrow rows on the driver; the direct writer
(direct_append.py) stages data files its Spark tasks wrote. Either way one catalog commit (`commit_batch`, the
loop both share) adds a snapshot whose summary holds the batch's record (position.py). The catalog's commit is
optimistic: it succeeds only if the table's current snapshot is still the one the append started from, and fails
with CommitFailedException otherwise, having changed nothing.

pyiceberg would retry such a failed append on top of the new snapshot by itself (appends do not conflict in
Iceberg's rules), which would commit a batch twice when the other writer was another run of the same sink. So
the append runs on a view of the table that retries nothing, and the sink decides: it reads the table again,
and if the sink's batch is there, reports it as committed by the other run (BatchAlreadyCommittedError);
if the sink moved in another way, refuses (ConcurrentWriterError); else it appends again on the new snapshot.
A re-run of a batch the table already holds is recognised before anything is written.

A table that does not exist is created by its first commit, from the batch's Arrow schema (every column
nullable, as Spark's writers make them) partitioned by `partition_by` (columns and Iceberg's transforms:
partitions.py) and sorted by `sort_by` (sort_orders.py); a table that exists keeps its spec and order, and a
`partition_by` or `sort_by` that is not the table's is refused. The rows change the table's schema as
evolution.py allows (columns added, types widened, with `merge_schema`) in the batch's own snapshot, and are
written in the table's sort order.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafka_spark.iceberg.catalog import optional_schema
from kafka_spark.iceberg.evolution import evolve
from kafka_spark.iceberg.partitions import (
    check_table_spec,
    iceberg_schema,
    parse_partitions,
    partition_spec,
    require_transforms,
)
from kafka_spark.iceberg.position import (
    IcebergLocation,
    logged_batch,
    logged_positions,
    summary_properties,
    table_files,
    table_positions,
)
from kafka_spark.iceberg.sort_orders import check_table_order, require_sort_transforms, sort_order, sorted_rows
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.errors import BatchAlreadyCommittedError, ConcurrentWriterError
from kafka_spark.sink.position import SinkCommit, keep_committed

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table, Transaction

log = logging.getLogger(__name__)

# Appends tried when other writers' commits keep landing first, and the longest pause between two.
ATTEMPTS = 8
MAX_PAUSE_S = 2.0
NO_RETRIES = {"commit.retry.num-retries": "0"}


def append_batch(location: IcebergLocation, rows: pa.Table, commit: SinkCommit, partition_by: Sequence[str] = (),
                 merge_schema: bool = False, sort_by: Sequence[str] = ()) -> tuple[SinkCommit, int | None]:
    """Append `rows` with `commit` in one snapshot, in the table's sort order; the commit the table holds for the
    batch (this run's) and the snapshot's sequence number. BatchAlreadyCommittedError when another run's commit
    holds the batch; SchemaMismatchError (evolution.py) when the rows change the schema and may not."""

    def stage(txn: Transaction) -> None:
        crash_point("before-write")
        evolve(txn, rows.schema, merge_schema, str(location))
        metadata = txn.table_metadata
        ordered = sorted_rows(rows, metadata.sort_order_by_id(metadata.default_sort_order_id), metadata.schema())
        txn.append(ordered, snapshot_properties=summary_properties(commit))  # writes the data files

    return commit_batch(location, commit, lambda: open_table(location, rows.schema, partition_by, sort_by), stage)


def commit_batch(location: IcebergLocation, commit: SinkCommit, opened: Callable[[], Table],
                 stage: Callable[[Transaction], None]) -> tuple[SinkCommit, int | None]:
    """Commit the batch exactly once: `stage(txn)` puts its snapshot (with `summary_properties(commit)`) in a
    transaction on a view of the table that retries nothing; a commit another writer beat is decided here and
    staged again on the new snapshot. `opened()` loads (or creates) the table. The commit the table holds
    for the batch (this run's) and the snapshot's sequence number; BatchAlreadyCommittedError when another
    run's commit holds it."""
    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(ATTEMPTS):
        table = opened()
        done = held(table, location, commit)
        if done is not None:
            return done
        try:
            txn = no_retries(table).transaction()
            stage(txn)
            crash_point("before-commit")
            txn.commit_transaction()
        except CommitFailedException as exc:
            wait_to_retry(location, exc, attempt)
            continue
        crash_point("after-commit")
        table = location.load()
        found = logged_batch(table, commit.sink_id, commit.batch)
        if found is None or found[0].run_id != commit.run_id:
            raise ConcurrentWriterError(f"{location}: the commit of batch {commit.batch} of sink {commit.sink_id!r} "
                                        "returned, but the table's snapshots do not hold it")
        _keep(table, found[0])
        return found[0], found[1].sequence_number
    raise ConcurrentWriterError(
        f"other writers committed to {location} before each of {ATTEMPTS} attempts of batch {commit.batch} of sink "
        f"{commit.sink_id!r}; nothing of this run was committed")


def held(table: Table, location: IcebergLocation, commit: SinkCommit) -> tuple[SinkCommit, int | None] | None:
    """What the table holds for the sink before the append: None when the batch is still to be appended."""
    sink_id, batch = commit.sink_id, commit.batch
    logged, _ = logged_positions(table)
    own = logged.get(sink_id)
    latest = own[0] if own is not None else table_positions(table).get(sink_id)
    if latest is None or latest.batch < batch:
        if (latest.batch if latest is not None else -1) != batch - 1:
            raise ConcurrentWriterError(
                f"{location}: sink {sink_id!r} is at batch {latest.batch if latest else 'none'} in the table, but "
                f"this run planned batch {batch} from batch {batch - 1}; another writer moved the sink (or the table "
                "was rolled back). Nothing was written; run the load again.")
        return None
    found = logged_batch(table, sink_id, batch)
    winner = found[0] if found is not None else latest
    if winner.run_id == commit.run_id:  # an earlier attempt of this run landed after all
        _keep(table, winner)
        return winner, found[1].sequence_number if found is not None else None
    raise BatchAlreadyCommittedError(
        f"batch {batch} of sink {sink_id!r} was already committed to {location} by run {winner.run_id}; this run "
        "wrote nothing, so nothing was written twice", batch, winner.run_id)


def no_retries(table: Table) -> Table:
    """A view of `table` whose commits pyiceberg does not retry (the sink decides what a lost race means)."""
    from pyiceberg.table import Table as IcebergTable

    metadata = table.metadata.model_copy(update={"properties": {**table.metadata.properties, **NO_RETRIES}})
    return IcebergTable(table.name(), metadata, table.metadata_location, table.io, table.catalog)


def open_table(location: IcebergLocation, schema: Any, partition_by: Sequence[str],
               sort_by: Sequence[str] = ()) -> Table:
    """The table, created from `schema` (Arrow) when the catalog does not have it yet; ConfigError when
    `partition_by` is not the spec of the table that exists, or `sort_by` not its order."""
    from pyiceberg.exceptions import NoSuchTableError

    try:
        table = location.load()
    except NoSuchTableError:
        return create_table(location, schema, partition_by, sort_by)
    return _checked(table, location, partition_by, sort_by)


def create_table(location: IcebergLocation, schema: Any, partition_by: Sequence[str] = (),
                 sort_by: Sequence[str] = ()) -> Table:
    """Create the table with `schema` (Arrow; every column made nullable) partitioned by `partition_by`
    (partitions.py: columns and Iceberg's transforms) and sorted by `sort_by` (sort_orders.py), its namespace
    too; the table another run created meanwhile is taken as it is when its spec and order are these."""
    from pyiceberg.exceptions import TableAlreadyExistsError

    parse_partitions(partition_by)  # a bad entry is refused before the catalog is asked
    fresh = iceberg_schema(optional_schema(schema))
    spec = partition_spec(fresh, partition_by)
    require_transforms(spec, str(location))
    order = sort_order(fresh, sort_by)
    require_sort_transforms(order, str(location))
    catalog = location.catalog.open()
    namespace = location.identifier[:-1]
    try:
        catalog.create_namespace_if_not_exists(namespace)
    except Exception:
        # Tables of one namespace created side by side (a routed batch's commits run in threads): the loser of
        # the race can get the catalog's own integrity error instead of "already exists"; the namespace is there.
        if not catalog.namespace_exists(namespace):
            raise
    # The spec's and the order's sources are field ids: given with the schema that has them, the table is
    # created with its spec as its first (id 0) and its order as its first (id 1), as Spark's DDL creates them
    # (the catalog maps them to its own ids by name).
    with contextlib.suppress(TableAlreadyExistsError):
        catalog.create_table_transaction(location.identifier, schema=fresh, partition_spec=spec,
                                         sort_order=order).commit_transaction()
    return _checked(location.load(), location, partition_by, sort_by)


def _checked(table: Table, location: IcebergLocation, partition_by: Sequence[str],
             sort_by: Sequence[str] = ()) -> Table:
    """`table` when `partition_by` is its spec and `sort_by` its order (or they are empty) and their transforms
    can be computed here."""
    check_table_spec(table.spec(), table.schema(), partition_by, str(location))
    require_transforms(table.spec(), str(location))
    check_table_order(table.sort_order(), table.schema(), sort_by, str(location))
    require_sort_transforms(table.sort_order(), str(location))
    return table


def wait_to_retry(location: object, exc: Exception, attempt: int) -> None:
    """Back off before reading the table again after another writer's commit landed first (jittered, doubling)."""
    pause = min(MAX_PAUSE_S, 0.05 * 2 ** attempt) * random.uniform(0.5, 1.0)
    log.info("%s: another commit landed first (%s); reading the table again in %.2fs", location, exc, pause)
    time.sleep(pause)


def _keep(table: Table, commit: SinkCommit) -> None:
    """Keep the committed record beside the table (positions survive snapshot expiry through it)."""
    files = table_files(table)
    if files is not None:
        keep_committed(files, commit)
