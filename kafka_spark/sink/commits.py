"""Around a batch's table commits: running them side by side, reporting a failed one, publishing them.

`run_commits` runs a batch's table commits side by side (each table is its own, so their transactions
do not conflict, and most of a commit's time is latency: Spark's job and the table log's work).
`Mirrors` gathers the committed positions of a run's tables and publishes them once per consumer group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.sink.errors import SinkError
from kafka_spark.sink.options import Publishing
from kafka_spark.sink.position import check_sink_id
from kafka_spark.sink.publish import check_publish_options, publish_committed
from kafka_spark.sink.results import LoadResult
from kafka_spark.spark.failures import schema_changed

if TYPE_CHECKING:
    from kafka_spark.sink.routed import RoutedTable
    from kafka_spark.sink.table_format import TableFormat, TableWrites

log = logging.getLogger(__name__)

# The most table commits of one batch that run at once (each a Spark job and log work of its own).
COMMIT_THREADS = 8

T = TypeVar("T")


def run_commits(spark, commits: Sequence[Callable[[], T]]) -> list[T | Exception]:
    """Run a batch's table commits, at most `COMMIT_THREADS` at once, and wait for every one of them: each
    one's result or error, in the order given. Each thread runs its Spark jobs with the caller's local
    properties (a stream's job group, so that stopping the query cancels them, its SQL execution)."""
    if len(commits) <= 1:
        return [_outcome(c) for c in commits]
    from py4j.clientserver import ClientServer

    sc = spark.sparkContext
    # Pinned threads (PySpark's default): each Python thread has a JVM thread of its own, as InheritableThread.
    properties = sc._jsc.sc().getLocalProperties() if isinstance(sc._gateway, ClientServer) else None

    def adopt() -> None:
        if properties is not None:
            sc._jsc.sc().setLocalProperties(properties.clone())

    with ThreadPoolExecutor(min(COMMIT_THREADS, len(commits)), "kafka-spark-commit", initializer=adopt) as pool:
        futures = [pool.submit(_outcome, c) for c in commits]
        return [f.result() for f in futures]


def _outcome(commit: Callable[[], T]) -> T | Exception:
    try:
        return commit()
    except Exception as exc:  # reported by the caller, by table, once every commit has finished
        return exc


def following_schema(writes: TableWrites, routed: RoutedTable, location: object,
                     commit: Callable[[], LoadResult]) -> LoadResult:
    """`commit()`; for a table that follows its subject's versions (`schemaEvolutionMode=addNewColumns`), once
    more when its read met a record of a version registered after the batch began (the read stops rather than
    drop the record's new fields): its writer is chosen again and the batch is read with that version."""
    try:
        return commit()
    except Exception as exc:
        if not (routed.options.evolving and schema_changed(exc)):
            raise
    log.info("table %s: its subject gained a version while the batch was read; writing the batch with it",
             routed.table)
    writes.writer(routed, location)
    done = commit()
    done.retries += 1
    return done


def failed_result(routed: RoutedTable, sink_id: str, exc: BaseException) -> LoadResult:
    """A table whose commit (or the reading of its position) failed, with the error in one line."""
    error = f"{type(exc).__name__}: {error_line(exc)}"[:2000]
    log.error("table %s (topic %r) failed: %s", routed.table, routed.topic, error)
    return LoadResult("failed", sink_id, None, table=routed.table, topic=routed.topic, error=error)


def error_line(exc: BaseException) -> str:
    """The first line of an error's message; for an error from the JVM, of the JVM exception's."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else ""


def check_table(spark, routed: RoutedTable, table_format: TableFormat) -> None:
    """The checks of a table's options: the sink's own, then its format's."""
    opts = routed.options
    check_sink_id(opts.sink_id)
    table_format.check(spark, opts)
    check_publish_options(opts.source, opts.publishing)


class Mirrors:
    """The committed positions of a run's tables, published together after the run's commits."""

    def __init__(self) -> None:
        self._offsets: dict[tuple[str | None, str | None], dict[TopicPartition, int]] = {}
        self._kafka: Mapping[str, str] = {}

    def add(self, publishing: Publishing, offsets: Mapping[TopicPartition, int]) -> None:
        if publishing.group or publishing.zookeeper_group:
            self._kafka = publishing.kafka
            known = self._offsets.setdefault((publishing.group, publishing.zookeeper_group), {})
            # A split topic's tables share its group: the group is where the furthest-behind one is.
            known.update({tp: min(off, known.get(tp, off)) for tp, off in offsets.items()})

    def publish(self, cluster: Cluster | None = None) -> None:
        """One OffsetCommit per group (and one ZooKeeper write per group); a failure fails the run."""
        if not self._offsets:
            return
        pending, self._offsets = self._offsets, {}
        try:
            if cluster is None:
                with Cluster(self._kafka) as own:
                    self._publish(pending, own)
            else:
                self._publish(pending, cluster)
        except Exception as exc:  # the commits stand; the next run publishes them again
            raise SinkError(f"the tables committed, but publishing their positions failed: {exc}") from exc

    def _publish(self, pending: dict[tuple[str | None, str | None], dict[TopicPartition, int]],
                 cluster: Cluster) -> None:
        for (group, zookeeper_group), offsets in pending.items():
            publish_committed(Publishing(self._kafka, group, zookeeper_group), offsets, cluster)
