"""What a routed load or micro-batch did: one `LoadResult` per table, totals, and the failing tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.sink.errors import SinkError
from kafka_spark.sink.results import LoadResult


@dataclass
class MultiLoadResult:
    """Per-table results of a routed load (or one micro-batch of a routed stream), in table order.

    `seconds` is the wall time; `driver_seconds` the CPU time of the driver's Python process over it
    (planning, positions, the commit protocol; Spark's own work runs in the JVM). `latest` holds the
    brokers' latest offsets where the run learned them, for `lag`. `batch_id` is the stream's micro-batch.
    """

    tables: list[LoadResult] = field(default_factory=list)
    seconds: float = 0.0
    driver_seconds: float = 0.0
    latest: dict[TopicPartition, int] = field(default_factory=dict)
    batch_id: int | None = None

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.tables)

    @property
    def failed(self) -> list[LoadResult]:
        return [r for r in self.tables if r.status == "failed"]

    @property
    def committed(self) -> list[LoadResult]:
        return [r for r in self.tables if r.status == "committed"]

    @property
    def status(self) -> str:
        """'committed' (some table committed, none failed), 'up-to-date', 'failed' or 'partial'."""
        if self.failed:
            return "partial" if self.committed else "failed"
        return "committed" if self.committed else "up-to-date"

    @property
    def records_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def by_table(self) -> dict[str, LoadResult]:
        return {r.table: r for r in self.tables}

    def lag(self, latest: Mapping[TopicPartition, int] | None = None) -> dict[str, int]:
        """Offsets not yet in each table, against `latest` (default: what the run learned); tables whose
        partitions it has no latest offset for are left out."""
        known = self.latest if latest is None else latest
        lags: dict[str, int] = {}
        for r in self.tables:
            if r.offsets and all(tp in known for tp in r.offsets):
                lags[r.table] = sum(max(known[tp] - off, 0) for tp, off in r.offsets.items())
        return lags

    def summary(self) -> dict[str, Any]:
        lags = self.lag()
        return {
            "status": self.status, "rows": self.rows, "seconds": round(self.seconds, 3),
            "driver_seconds": round(self.driver_seconds, 3),
            "records_per_second": round(self.records_per_second, 1),
            **({"micro_batch": self.batch_id} if self.batch_id is not None else {}),
            "failed": [r.table for r in self.failed],
            "tables": [{**r.summary(), **({"lag": lags[r.table]} if r.table in lags else {})} for r in self.tables],
        }


class TableCommitError(SinkError):
    """A routed table's commit failed (fail-fast): `table` names it, `result` holds what the run did before."""

    def __init__(self, message: str, table: str, topic: str, result: MultiLoadResult) -> None:
        super().__init__(message)
        self.table = table
        self.topic = topic
        self.result = result
