"""The committed Kafka position of an Iceberg table: what each sink has loaded, read from the table alone.

Every commit of a sink is one snapshot whose summary holds the batch's record (`SinkCommit` JSON) under
`kafka-spark.sink.<sink id>`, and the sink's application id under `kafka-spark.app-id`, as Iceberg's Kafka
Connect sink keeps its offsets in the summaries of its snapshots. A sink's position is its record in the newest
snapshot of the current snapshot's ancestry that has one: a rolled-back table has rolled back its positions
with its rows.

Expiring snapshots removes their summaries. So after each commit the record is also kept beside the table
(`<location>/_kafka_spark/offsets/<sink id>/<batch>.json`, sink/position.py; a path Iceberg's orphan-file
removal leaves alone, as it starts with `_`), and when the ancestry has been cut by expiry (its oldest
snapshot has a parent that is gone) a sink found in none of the snapshots left resumes from its latest kept
record. Kept records are written on the table's own store: local disk, or object stores through the table's
pyarrow FileIO (S3, GCS, ADLS; an fsspec FileIO keeps none).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.iceberg.catalog import IcebergCatalog, as_catalog
from kafka_spark.sink.position import OFFSETS, SinkCommit, app_id, kept_commit, kept_sink_ids
from kafka_spark.sink.table_files import ArrowFiles, LocalFiles, TableFiles, local_path

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

log = logging.getLogger(__name__)

SINK_PREFIX = "kafka-spark.sink."
APP_ID = "kafka-spark.app-id"


@dataclass(frozen=True)
class IcebergLocation:
    """An Iceberg table of a catalog, found (`locate`) or about to be created by its first commit."""

    catalog: IcebergCatalog
    identifier: tuple[str, ...]

    def __str__(self) -> str:
        return ".".join(self.identifier)

    def load(self) -> Table:
        """The table as the catalog has it now (NoSuchTableError when it does not exist)."""
        return self.catalog.open().load_table(self.identifier)


def summary_properties(commit: SinkCommit) -> dict[str, str]:
    """What a sink's snapshot carries in its summary."""
    return {SINK_PREFIX + commit.sink_id: commit.to_json(), APP_ID: app_id(commit.sink_id)}


def _records(snapshot: Snapshot) -> dict[str, str]:
    summary = snapshot.summary
    extra = summary.additional_properties if summary is not None else {}
    return {k.removeprefix(SINK_PREFIX): v for k, v in extra.items() if k.startswith(SINK_PREFIX)}


def ancestry(table: Table) -> tuple[list[Snapshot], bool]:
    """The current snapshot and its ancestors, newest first, and whether that is the whole history (False
    when expiry removed older ancestors: the oldest has a parent that is gone, or a sequence number above 1)."""
    from pyiceberg.table.snapshots import ancestors_of

    snapshots = list(ancestors_of(table.current_snapshot(), table.metadata))
    if not snapshots:
        return snapshots, True
    oldest = snapshots[-1]
    # Expiry may clear the parent of the oldest snapshot it keeps (pyiceberg's does), but not its sequence number:
    # a format-2 table's first snapshot is number 1, so a larger one means older snapshots are gone.
    return snapshots, oldest.parent_snapshot_id is None and (oldest.sequence_number or 0) <= 1


def logged_positions(table: Table) -> tuple[dict[str, tuple[SinkCommit, Snapshot]], bool]:
    """Every sink's newest record in the table's ancestry with its snapshot, and whether the ancestry is whole."""
    snapshots, whole = ancestry(table)
    found: dict[str, tuple[SinkCommit, Snapshot]] = {}
    for snapshot in snapshots:
        for sink_id, text in _records(snapshot).items():
            if sink_id not in found:
                where = f"{'.'.join(table.name())} snapshot {snapshot.snapshot_id}"
                found[sink_id] = (SinkCommit.from_json(text, where), snapshot)
    return found, whole


def logged_batch(table: Table, sink_id: str, batch: int) -> tuple[SinkCommit, Snapshot] | None:
    """`batch` of `sink_id` and its snapshot, if the table's ancestry holds it."""
    for snapshot in ancestry(table)[0]:
        text = _records(snapshot).get(sink_id)
        if text is None:
            continue
        commit = SinkCommit.from_json(text, f"{'.'.join(table.name())} snapshot {snapshot.snapshot_id}")
        if commit.batch == batch:
            return commit, snapshot
        if commit.batch < batch:
            return None
    return None


def table_files(table: Table) -> TableFiles | None:
    """Where the sink keeps its records beside the table: on local disk, or on the table's store through the
    pyarrow file system of the table's own FileIO (its credentials and endpoint); None for a FileIO of another
    kind (fsspec's)."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    root = local_path(table.location())
    if root is not None:
        return LocalFiles(root)
    io = table.io
    if not isinstance(io, PyArrowFileIO):
        return None
    scheme, netloc, path = PyArrowFileIO.parse_location(table.location(), io.properties)
    return ArrowFiles(table.location(), io.fs_by_scheme(scheme, netloc), path)


def _kept_latest(files: TableFiles | None, sink_id: str) -> SinkCommit | None:
    if files is None:
        return None
    batches = [int(n.removesuffix(".json")) for n in files.list_files(f"{OFFSETS}/{sink_id}")
               if n.endswith(".json") and n.removesuffix(".json").isdigit()]
    return kept_commit(files, sink_id, max(batches)) if batches else None


def table_positions(table: Table) -> dict[str, SinkCommit]:
    """The last committed batch of every kafka-spark sink of the table."""
    logged, whole = logged_positions(table)
    positions = {sink_id: commit for sink_id, (commit, _) in logged.items()}
    if not whole:
        files = table_files(table)
        for sink_id in kept_sink_ids(files) if files is not None else []:
            if sink_id not in positions:
                kept = _kept_latest(files, sink_id)
                if kept is not None:
                    log.warning("%s: sink %r is in none of the snapshots left after expiry; resuming from its "
                                "kept batch %d", ".".join(table.name()), sink_id, kept.batch)
                    positions[sink_id] = kept
    return positions


def _load(catalog: IcebergCatalog | Mapping[str, str] | str | None, table: str) -> Table | None:
    from pyiceberg.exceptions import NoSuchTableError

    settings = as_catalog(catalog)
    try:
        return settings.open().load_table(settings.identifier(table))
    except NoSuchTableError:
        return None


def committed_positions(table: str, catalog: IcebergCatalog | Mapping[str, str] | str | None = None
                        ) -> dict[str, SinkCommit]:
    """The last committed batch of every kafka-spark sink of the Iceberg table `table` (`namespace.table`) of
    `catalog` ({} for a table that does not exist)."""
    found = _load(catalog, table)
    return table_positions(found) if found is not None else {}


def committed_position(table: str, sink_id: str, catalog: IcebergCatalog | Mapping[str, str] | str | None = None
                       ) -> SinkCommit | None:
    """The last committed batch of one sink, or None if it has never committed to the table."""
    return committed_positions(table, catalog).get(sink_id)


def sink_positions(location: Any, sink_id: str) -> tuple[SinkCommit | None, list[SinkCommit]]:
    """The sink's last commit to the table and the other sinks' (None and [] for a table not created yet)."""
    from pyiceberg.exceptions import NoSuchTableError

    if location is None:
        return None, []
    try:
        positions = table_positions(location.load())
    except NoSuchTableError:
        return None, []
    own = positions.pop(sink_id, None)
    return own, list(positions.values())
