"""What a load or a micro-batch reports for one table: `LoadResult`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.sink.freshness import Freshness


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
            **({"bytes": self.bytes} if self.bytes else {}), **({"retries": self.retries} if self.retries else {}),
        }
