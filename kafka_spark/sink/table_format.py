"""What a table format gives the sink: its tables' positions and its writers, behind one interface.

The sink's core (planning, positions and resume rules, routing, the read, the direct writer's Parquet
tasks, results, progress, publishing) knows no table format. A format is a `TableFormat`: it finds a
table (`locate`, an opaque location the core hands back), reads the positions its commits hold, checks
and repairs what it owns beside a table (a dead-letter table), and makes a batch's `TableWrites`, which
commit each table's rows and offsets in one transaction of that format. Delta's is `delta/backend.py`;
another format is a folder of its own beside it, with a `TableFormat` of its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    from kafka_spark.sink.options import Compacting, KafkaSource, LoadOptions
    from kafka_spark.sink.plan import BatchPlan
    from kafka_spark.sink.position import SinkCommit
    from kafka_spark.sink.results import Compaction, LoadResult
    from kafka_spark.sink.routed import RoutedTable


class TableWrites(ABC):
    """One batch's writers, table by table: chosen (`writer`), given their batch (`add`), their files written
    together where a writer writes files itself (`write_files`), then committed one by one (`commit`).

    A table whose writer could not be chosen, or whose files could not be written, fails alone at its commit.
    """

    @abstractmethod
    def writer(self, routed: RoutedTable, location: Any) -> Any:
        """Choose the table's writer; None when it cannot be chosen (the error is raised at its commit)."""

    @abstractmethod
    def reads_own(self, routed: RoutedTable) -> bool:
        """Whether the table's writer reads its rows from Kafka itself rather than taking the batch's rows."""

    @abstractmethod
    def add(self, routed: RoutedTable, plan: BatchPlan, commit: SinkCommit) -> None:
        """The table's part of the batch: its ranges and the position its commit records."""

    @abstractmethod
    def spark_rows(self, routed: RoutedTable) -> bool:
        """Whether the table's rows go through Spark (so one shared Spark read can serve several tables)."""

    @abstractmethod
    def write_files(self) -> None:
        """Write the files of every table whose writer writes them itself, in one read."""

    @abstractmethod
    def commit(self, routed: RoutedTable, rows: Callable[[], Any], label: str, location: Any,
               progress: bool = True) -> LoadResult:
        """Commit the table's rows (`rows()`: its DataFrame, asked for only when needed) and position."""


class TableFormat(ABC):
    """A table format's side of the sink (see the module docstring)."""

    name: str
    compacts = False  # whether `compact` serves a stream's `compact_every`

    def compact(self, location: Any, settings: Compacting, writer: Any = None) -> Compaction:
        """Compact the table's small files in a commit that changes no data and no sink's position, then vacuum as
        `settings` asks; `writer` is the table's writer as `writes` keeps it, brought up to the new version."""
        raise ConfigError(f"compact_every: {self.name} tables are not compacted by the stream; run the table "
                          "format's own maintenance")

    @abstractmethod
    def locate(self, table: str, conf: Any) -> Any | None:
        """Where `table` (a path, store URI or catalog name) is; None for a catalog table not created yet. `conf`
        reaches its store: a SparkSession, a mapping of Hadoop settings, or None."""

    @abstractmethod
    def positions(self, location: Any, sink_id: str) -> tuple[SinkCommit | None, list[SinkCommit]]:
        """The sink's last commit to the table and the other sinks' (None and [] for a table not created yet)."""

    @abstractmethod
    def position(self, location: Any, sink_id: str) -> SinkCommit | None:
        """The sink's last commit to the table (None: none yet)."""

    @abstractmethod
    def check(self, spark: Any, options: LoadOptions) -> None:
        """The format's checks of one table's options (ConfigError), before anything is read."""

    @abstractmethod
    def repair(self, spark: Any, options: LoadOptions, previous: SinkCommit | None) -> None:
        """Finish what a crash after the table's last commit left undone (its dead letters)."""

    @abstractmethod
    def choose_writer(self, spark: Any, options: LoadOptions, location: Any) -> Any:
        """The writer of one table (kept as `TableWrites.writer` keeps it); a writer its options ask for that
        cannot serve the table is refused here, before a stream starts."""

    @abstractmethod
    def create_table(self, spark: Any, table: str, schema: Any, partition_by: Sequence[str],
                     sort_by: Sequence[str] = ()) -> Any:
        """Create the catalog table `table` with `schema` (a Spark StructType), unless it exists (an Iceberg table
        sorted by `sort_by`); its location."""

    @abstractmethod
    def root(self, location: Any) -> str:
        """The table's root directory (path or store URI), beside which a stream's checkpoint can live."""

    @abstractmethod
    def writes(self, spark: Any, source: KafkaSource,
               choices: MutableMapping[str, Any] | None = None) -> TableWrites:
        """A batch's writers; `choices` keeps the tables' writers between a stream's micro-batches."""
