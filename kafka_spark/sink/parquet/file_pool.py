"""The rolling pool of Parquet files a direct-writing task keeps open, whatever the table format.

A task's rows go to one open file per partition (`key`), at most `max_open_files` at once: rows of one more
partition close the least recently written file. Rows wait in memory for their file's next row group; once the
task holds `row_group_bytes` of them, the file holding the most gets its row group written, and a file that has
reached `target_file_bytes` is closed. Each closed file becomes one row the task yields (`done`).

The table format supplies the rest (delta's `FileWriter` in files.py, Iceberg's `DataFileWriter` in
iceberg/data_files.py): how rows are split into partitions and a file is created, how pending rows become a row
group, the row a closed file yields and how a file is deleted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import pyarrow as pa

from kafka_spark.sink.freshness import TimestampSketch


class PooledFile:
    """One open Parquet file of a pool (under `key`, its partition) and the rows waiting for its next row group."""

    def __init__(self, key: str, path: str, sink: Any, writer: Any) -> None:
        self.key, self.path, self.sink, self.writer = key, path, sink, writer
        self.pending: list[pa.RecordBatch] = []
        self.pending_bytes = 0
        # The records' Kafka timestamps, for the commit's freshness (sink/freshness.py).
        self.timestamps = TimestampSketch()

    def timestamps_json(self) -> str | None:
        """The records' timestamp sketch, None when none had one."""
        return self.timestamps.to_json() if self.timestamps.points.size else None


F = TypeVar("F", bound=PooledFile)


def _pending_bytes(file: PooledFile) -> int:
    return file.pending_bytes


class FilePool(ABC, Generic[F]):
    """Open files by partition key, least recently written first, and the rows they have yet to write."""

    def __init__(self, target_file_bytes: int, row_group_bytes: int, max_open_files: int) -> None:
        # The thresholds are taken at construction: the writers pass their module's settings (tests patch them).
        self.target_file_bytes = target_file_bytes
        self.row_group_bytes = row_group_bytes
        self.max_open_files = max_open_files
        self.done: list[dict[str, Any]] = []
        self._open: dict[str, F] = {}
        self._pending_bytes = 0

    @abstractmethod
    def _write_row_group(self, file: F) -> None:
        """Write `file.pending` to `file.writer` as one row group."""

    @abstractmethod
    def _row(self, file: F, size: int) -> dict[str, Any]:
        """The row a closed file of `size` bytes yields."""

    @abstractmethod
    def _delete(self, path: str) -> None:
        """Delete the file at `path` (a `PooledFile.path`)."""

    def _file(self, key: str, create: Callable[[], F]) -> F:
        """The open file of `key`, now the most recently written; a new one from `create` if there is none, after
        closing the least recently written file when the pool is full."""
        file = self._open.pop(key, None)
        if file is None:
            if len(self._open) >= self.max_open_files:
                self._close(next(iter(self._open.values())))
            file = create()
        self._open[key] = file
        return file

    def _add(self, file: F, data: pa.RecordBatch, rows: pa.RecordBatch) -> None:
        """Queue `data` (the rows as the file holds them) for `file`; `rows` (as given) may carry `timestamp`."""
        if "timestamp" in rows.schema.names:
            file.timestamps.add_column(rows.column("timestamp"))
        size = data.nbytes
        file.pending.append(data)
        file.pending_bytes += size
        self._pending_bytes += size

    def _roll(self) -> None:
        """Write row groups, biggest pending first, until less than a row group waits; close full files."""
        while self._pending_bytes >= self.row_group_bytes:
            file = max(self._open.values(), key=_pending_bytes)
            self._flush(file)
            if file.sink.tell() >= self.target_file_bytes:
                self._close(file)

    def finish(self) -> list[dict[str, Any]]:
        """Close the open files; every file written, as the rows the task yields."""
        for file in list(self._open.values()):
            self._close(file)
        return self.done

    def discard(self) -> None:
        """Delete every file written (a batch that cannot commit, or a failed task, leaves none behind)."""
        for file in self._open.values():
            try:
                file.writer.close()
            finally:
                file.sink.close()
            self.done.append({"path": file.path})
        self._open, self._pending_bytes = {}, 0
        for row in self.done:
            self._delete(row["path"])
        self.done = []

    def _flush(self, file: F) -> None:
        if file.pending:
            self._write_row_group(file)
            self._pending_bytes -= file.pending_bytes
            file.pending, file.pending_bytes = [], 0

    def _close(self, file: F) -> None:
        self._flush(file)
        file.writer.close()
        size = file.sink.tell()
        file.sink.close()
        del self._open[file.key]
        self.done.append(self._row(file, size))
