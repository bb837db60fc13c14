"""Spark's Iceberg writer (Apache Iceberg's `iceberg-spark-runtime`) as a writer of the sink's batches.

It serves where the others cannot: tables whose files are ORC or Avro (`write.format.default`; pyiceberg and the
direct writer write Parquet), or when asked (`writer="spark"`). The session needs Iceberg's runtime on its class
path; the catalog is the session's `spark.sql.catalog.<name>` when set (`name`: IcebergCatalog.name), else it is
registered from the pyiceberg properties (SQL catalogs on SQLite, REST and Hive catalogs; without secrets, which
Spark's configuration would show).

Spark's writer commits by itself and retries a lost race (appends do not conflict in Iceberg's rules): that would
commit a batch twice when the other writer was another run of the same sink, and its snapshot could not require
the sink's position. So Spark writes the batch to a branch of its own (`kafka-spark-stage-...`), created at the
table's current snapshot, which no reader follows; the driver takes the data files that branch's snapshot added
and appends them to the table's main branch with the batch's record, through the exactly-once loop of the other
writers (batch_append.commit_batch). The branch is removed after. A run killed between the two leaves its branch;
the sink's next commit removes the branches of its earlier batches (their files go when snapshot expiry takes
the branch's snapshot).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import uuid
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.batch_append import commit_batch, held, open_table
from kafka_spark.iceberg.catalog import IcebergCatalog, frame_arrow_schema, is_catalog_secret
from kafka_spark.iceberg.direct_append import Appended
from kafka_spark.iceberg.evolution import evolved
from kafka_spark.iceberg.position import IcebergLocation, summary_properties
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.errors import BatchAlreadyCommittedError
from kafka_spark.sink.freshness import ObservedFreshness

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table, Transaction

    from kafka_spark.sink.options import LoadOptions
    from kafka_spark.sink.position import SinkCommit

log = logging.getLogger(__name__)

SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
STAGE_PREFIX = "kafka-spark-stage-"
RUNTIME_MISSING = ("Spark's Iceberg writer needs Apache Iceberg's Spark runtime (org.apache.iceberg:"
                   "iceberg-spark-runtime-<spark>_<scala>) on the session's class path (spark.jars.packages)")


def has_iceberg_runtime(spark: Any) -> bool:
    """Whether the session's JVM has Iceberg's Spark catalog (a classic session; Spark Connect has no JVM here)."""
    try:
        jvm = spark.sparkContext._jvm
        # Jars of spark.jars are in Spark's class loader, not the JVM's system one Class.forName(name) asks.
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(SPARK_CATALOG, False, loader)
    except Exception:  # no JVM gateway, or the class is missing: py4j raises its own types
        return False
    return True


def spark_catalog(spark: Any, catalog: IcebergCatalog) -> str:
    """The name of the session's Spark catalog that is `catalog`: the one the session configures under
    `catalog.name`, else that name registered now from the pyiceberg properties. ConfigError when it cannot be."""
    if not has_iceberg_runtime(spark):
        raise ConfigError(RUNTIME_MISSING)
    key = f"spark.sql.catalog.{catalog.name}"
    if spark.conf.get(key, None):
        return catalog.name
    for name, value in spark_properties(catalog).items():
        spark.conf.set(f"{key}.{name}" if name else key, value)
    return catalog.name


def spark_properties(catalog: IcebergCatalog) -> dict[str, str]:
    """Iceberg's Spark catalog properties for the pyiceberg catalog `catalog` ('' keys the catalog's class)."""
    props = catalog.catalog_properties()
    secrets = sorted(k for k in props if is_catalog_secret(k))
    configure = (f"configure the session's spark.sql.catalog.{catalog.name} (and its properties) as Iceberg's "
                 "Spark runtime documents it")
    if secrets or re.search(r"://[^/@]*:[^/@]*@", props.get("uri", "")):
        raise ConfigError(f"the Iceberg catalog {catalog.name!r} has credentials ({', '.join(secrets) or 'uri'}), "
                          f"which Spark's configuration would show: {configure}")
    kind = props.pop("type", "").lower()
    # Uncached: the sink's own commits (pyiceberg's) change the tables between Spark's writes.
    out = {"": SPARK_CATALOG, "cache-enabled": "false"}
    if kind == "sql" and props.get("uri", "").startswith("sqlite:///"):
        # Iceberg's JDBC catalog reads and writes the tables pyiceberg's SQL catalog keeps, by catalog name.
        out.update({"type": "jdbc", "uri": "jdbc:sqlite:" + props.pop("uri").removeprefix("sqlite:///")})
    elif kind in ("rest", "hive"):
        out["type"] = kind
    else:
        raise ConfigError(f"the Iceberg catalog {catalog.name!r} (type {kind or 'unknown'}) is not registered in "
                          f"Spark here: {configure}")
    out.update(props)
    return out


def append_spark(spark: Any, location: IcebergLocation, options: LoadOptions, df: Any,
                 commit: SinkCommit) -> Appended:
    """Write `df` (the batch's rows as the table takes them) with Spark's Iceberg writer to a staging branch, then
    add its files to the table with `commit` in one snapshot, exactly once."""
    name = spark_catalog(spark, location.catalog)
    schema = frame_arrow_schema(df.schema)
    table = open_table(location, schema, options.format.partition_by, options.format.sort_by)
    done = held(table, location, commit)
    if done is not None:
        return Appended(*done)
    table = evolved(table, schema, options.format.merge_schema, str(location))
    table = _with_snapshot(table)
    _drop_stale(table, commit)
    # The batch and a run's id first, the sink's id last: a sink's id may hold dashes, or start as another's does.
    branch = f"{STAGE_PREFIX}{commit.batch}-{uuid.uuid4().hex[:8]}-{_safe(commit.sink_id)}"
    base = table.metadata.current_snapshot_id
    assert base is not None
    table.manage_snapshots().create_branch(base, branch).commit()
    observed = ObservedFreshness(df)
    crash_point("before-write")
    table_name = ".".join(f"`{part}`" for part in (name, *location.identifier))
    # Iceberg's Spark catalog caches tables: the cached one knows no branch made since.
    spark.catalog.refreshTable(table_name)
    target = f"{table_name}.`branch_{branch}`"
    try:
        observed.df.writeTo(target).append()
        files, rows = _staged(location.load(), branch, base)
        counted = dataclasses.replace(commit, records=rows)

        def stage(txn: Transaction) -> None:
            with txn.update_snapshot(snapshot_properties=summary_properties(counted)).fast_append() as append:
                for file in files:
                    append.append_data_file(file)

        winner, sequence = commit_batch(location, counted, location.load, stage)
    except BatchAlreadyCommittedError:
        _remove_branch(location, branch)
        raise
    _remove_branch(location, branch)
    size = sum(f.file_size_in_bytes for f in files)
    return Appended(winner, sequence, rows, size, observed.freshness())


def _safe(sink_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", sink_id)


def _with_snapshot(table: Table) -> Table:
    """`table` with a current snapshot to branch from: a new table gets an empty one (no files, no record)."""
    if table.metadata.current_snapshot_id is not None:
        return table
    with table.transaction() as txn, txn.update_snapshot().fast_append():
        pass
    return table.refresh()


def _staged(table: Table, branch: str, base: int | None) -> tuple[list[DataFile], int]:
    """The data files the branch's snapshot added on top of `base` (the snapshot it was created at), and their
    rows."""
    from pyiceberg.manifest import ManifestEntryStatus

    ref = table.metadata.refs.get(branch)
    snapshot = table.snapshot_by_id(ref.snapshot_id) if ref is not None else None
    if snapshot is None:
        raise ConfigError(f"{'.'.join(table.name())}: Spark's writer left no branch {branch}; was it removed by "
                          "another run?")
    if snapshot.snapshot_id == base:
        return [], 0  # Spark committed nothing: the branch still points where it was created
    files = [entry.data_file for manifest in snapshot.manifests(table.io)
             if manifest.added_snapshot_id == snapshot.snapshot_id
             for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
             if entry.status == ManifestEntryStatus.ADDED]
    return files, sum(f.record_count for f in files)


def _drop_stale(table: Table, commit: SinkCommit) -> None:
    """Remove the staging branches of the sink's earlier batches (runs killed between Spark's write and the
    commit): the table's position is past them. Branches of this batch may be a racing run's: they stay."""
    stale = stale_branches(table.metadata.refs, commit.sink_id, commit.batch)
    if stale:
        manage = table.manage_snapshots()
        for ref in stale:
            manage = manage.remove_branch(ref)
        try:
            manage.commit()
        except Exception as exc:  # another run removed them first, or committed meanwhile: the next one retries
            log.info("%s: staging branches left for later: %s", ".".join(table.name()), exc)


def stale_branches(refs: Iterable[str], sink_id: str, batch: int) -> list[str]:
    """The staging branches among `refs` of sink `sink_id`'s batches before `batch`."""
    sink = _safe(sink_id)
    stale = []
    for ref in refs:
        number, _, rest = ref.removeprefix(STAGE_PREFIX).partition("-")
        if ref.startswith(STAGE_PREFIX) and number.isdigit() and int(number) < batch \
                and rest.partition("-")[2] == sink:
            stale.append(ref)
    return stale


def _remove_branch(location: IcebergLocation, branch: str) -> None:
    try:
        location.load().manage_snapshots().remove_branch(branch).commit()
    except Exception as exc:  # the batch stands; the sink's next commit removes it
        log.info("%s: staging branch %s left for the next commit to remove: %s", location, branch, exc)
