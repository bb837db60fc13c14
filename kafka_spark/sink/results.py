"""What a load or a micro-batch reports for one table: `LoadResult`, and what a compaction did (`Compaction`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.sink.freshness import Freshness


@dataclass
class Compaction:
    """What compacting one table did: its active data files before and after, the files the rewrite removed
    and added (a commit that changes no data), the commit's version (None: nothing to compact, or a dry run),
    and, when a vacuum followed, the files it deleted. `error` says why a stream's compaction did not run
    through (the stream goes on, and compacts again later)."""

    table: str = ""
    files_before: int = 0
    files_after: int = 0
    removed: int = 0
    added: int = 0
    table_version: int | None = None
    vacuumed: int | None = None
    seconds: float = 0.0
    dry_run: bool = False
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        return {
            **({"table": self.table} if self.table else {}), "files_before": self.files_before,
            "files_after": self.files_after, "removed": self.removed, "added": self.added,
            "table_version": self.table_version, "seconds": round(self.seconds, 3),
            **({"vacuumed": self.vacuumed} if self.vacuumed is not None else {}),
            **({"dry_run": True} if self.dry_run else {}), **({"error": self.error} if self.error else {}),
        }

    def text(self, version_label: str = "Delta version") -> str:
        """'compacted 60 files into 1 (61 -> 2 files, Delta version 75)', for progress lines (`version_label`: what
        the table format calls `table_version`)."""
        if self.error:
            return f"compaction failed: {self.error}"
        if self.dry_run:
            done = f"would compact {self.removed:,} files"
        else:
            done = f"compacted {self.removed:,} files into {self.added:,}" if self.removed else "nothing to compact"
        version = f", {version_label} {self.table_version}" if self.table_version is not None else ""
        vacuumed = f"; vacuum deleted {self.vacuumed:,} files" if self.vacuumed is not None else ""
        return f"{done} ({self.files_before:,} -> {self.files_after:,} files{version}){vacuumed}"


@dataclass
class LoadResult:
    """What one run did: `status` is 'committed', 'up-to-date' or, for one table of a routed load, 'failed'
    (with `error`). `table` and `topic` are set for a routed load's tables."""

    status: str
    sink_id: str
    batch: int | None
    rows: int = 0
    seconds: float = 0.0
    table_version: int | None = None
    start: dict[TopicPartition, int] = field(default_factory=dict)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    lost: dict[TopicPartition, int] = field(default_factory=dict)
    run_id: str = ""
    dead_letters: int = 0
    table: str = ""
    topic: str | None = None
    error: str | None = None
    writer: str = "spark"  # the writer that served the table, and why Spark's when 'auto' was asked
    writer_reason: str | None = None
    # Commit time minus the committed records' timestamps.
    freshness: Freshness | None = None
    bytes: int = 0  # of the data files the commit added
    # the batch's writes done again before its commit: a subject version registered during the read, a direct
    # write handed to Spark's writer
    retries: int = 0
    # A stream's compaction of the table after this commit (StreamOptions.compact_every), when one ran.
    compaction: Compaction | None = None

    @property
    def records_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "status": self.status, "sink": self.sink_id, "batch": self.batch, "rows": self.rows,
            "seconds": round(self.seconds, 3), "records_per_second": round(self.records_per_second, 1),
            "table_version": self.table_version, "start": json.loads(offsets_to_json(self.start)),
            "offsets": json.loads(offsets_to_json(self.offsets)),
            "lost": json.loads(offsets_to_json(self.lost)), "run": self.run_id, "dead_letters": self.dead_letters,
            **({"table": self.table} if self.table else {}), **({"error": self.error} if self.error else {}),
            "writer": self.writer, **({"writer_reason": self.writer_reason} if self.writer_reason else {}),
            **({"freshness_ms": self.freshness.summary()} if self.freshness is not None else {}),
            **({"compaction": self.compaction.summary()} if self.compaction is not None else {}),
            **({"bytes": self.bytes} if self.bytes else {}), **({"retries": self.retries} if self.retries else {}),
        }
