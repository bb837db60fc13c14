"""A second table format for the tests, written against `TableFormat` alone: Parquet files and a commit log.

A table is a directory: each commit writes its rows as Parquet under `data/<batch>-<sink>/` and then its
position as `_log/<sequence>.json` (one `os.link`, so two writers cannot take the same number). A commit
whose sink already holds the batch is refused, so a re-run cannot write twice. It knows nothing of Delta:
that the sink's loads and streams run on it shows the core (kafka_spark.sink) does not depend on Delta.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from kafka_spark.sink import BatchAlreadyCommittedError, LoadResult, SinkCommit
from kafka_spark.sink.options import KafkaSource, LoadOptions
from kafka_spark.sink.plan import BatchPlan
from kafka_spark.sink.read_plan import apply_transform
from kafka_spark.sink.routed import RoutedTable
from kafka_spark.sink.table_format import TableFormat, TableWrites

LOG = "_log"


def commits(root: Path) -> list[dict[str, Any]]:
    """The table's commit records in order."""
    log = root / LOG
    if not log.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(log.glob("*.json"), key=lambda p: int(p.stem))]


class ParquetLogFormat(TableFormat):
    name = "parquet-log"

    def locate(self, table: str, conf: Any) -> Path:
        return Path(table)

    def positions(self, location: Any, sink_id: str) -> tuple[SinkCommit | None, list[SinkCommit]]:
        last: dict[str, SinkCommit] = {}
        for record in commits(location):
            commit = SinkCommit.from_json(record["position"], str(location))
            last[commit.sink_id] = commit
        own = last.pop(sink_id, None)
        return own, list(last.values())

    def position(self, location: Any, sink_id: str) -> SinkCommit | None:
        return self.positions(location, sink_id)[0]

    def check(self, spark: Any, options: LoadOptions) -> None:
        if options.dead_letter is not None:
            raise ValueError("this format keeps no dead letters")

    def repair(self, spark: Any, options: LoadOptions, previous: SinkCommit | None) -> None:
        return None

    def choose_writer(self, spark: Any, options: LoadOptions, location: Any) -> Any:
        if options.writer == "direct":
            raise ValueError("this format has only Spark's writer")
        return "spark"

    def create_table(self, spark: Any, table: str, schema: Any, partition_by: Sequence[str]) -> Any:
        raise ValueError("this format has no catalog")

    def root(self, location: Any) -> str:
        return str(location)

    def writes(self, spark: Any, source: KafkaSource, choices: MutableMapping[str, Any] | None = None) -> TableWrites:
        return ParquetLogWrites(spark, self)


class ParquetLogWrites(TableWrites):
    def __init__(self, spark: Any, table_format: ParquetLogFormat) -> None:
        self.spark, self.table_format = spark, table_format
        self.work: dict[str, tuple[BatchPlan, SinkCommit]] = {}

    def writer(self, routed: RoutedTable, location: Any) -> Any:
        return "spark"

    def reads_own(self, routed: RoutedTable) -> bool:
        return False

    def add(self, routed: RoutedTable, plan: BatchPlan, commit: SinkCommit) -> None:
        self.work[routed.table] = (plan, commit)

    def spark_rows(self, routed: RoutedTable) -> bool:
        return True

    def write_files(self) -> None:
        return None

    def commit(self, routed: RoutedTable, rows: Callable[[], Any], label: str, location: Any,
               progress: bool = True) -> LoadResult:
        _, commit = self.work[routed.table]
        root = Path(routed.table)
        previous, _ = self.table_format.positions(root, commit.sink_id)
        if previous is not None and previous.batch >= commit.batch:
            raise BatchAlreadyCommittedError(f"batch {commit.batch} of {commit.sink_id!r} is already committed",
                                             commit.batch, previous.run_id)
        df = apply_transform(rows(), routed.options.format.transform)
        data = root / "data" / f"{commit.batch}-{commit.sink_id}"
        shutil.rmtree(data, ignore_errors=True)  # files of an attempt that never committed
        df.write.parquet(str(data))
        count = self.spark.read.parquet(str(data)).count()
        done = SinkCommit(commit.sink_id, commit.batch, commit.offsets, commit.start_offsets, commit.run_id,
                          count, commit.committed_at_ms)
        (root / LOG).mkdir(parents=True, exist_ok=True)
        staged = root / LOG / f".{uuid.uuid4().hex}"
        staged.write_text(json.dumps({"position": done.to_json(), "data": data.name}))
        sequence = len(commits(root))
        os.link(staged, root / LOG / f"{sequence}.json")  # fails if another writer took this number
        staged.unlink()
        return LoadResult("committed", commit.sink_id, commit.batch, rows=count, start=dict(commit.start_offsets),
                          offsets=dict(commit.offsets), run_id=commit.run_id, table=routed.table,
                          topic=routed.topic)
