"""An Iceberg table's snapshots read from its metadata folder as they land, in the shape of bench/kdi_report.py's
`LogTail` (so its per-record time-to-table and id checks serve both formats): no catalog and no engine, whoever
committed them (pyiceberg, Iceberg's Java library).

A snapshot's `timestamp-ms` is its writer's clock as it made the snapshot; the moment readers could see it is when
the first metadata file that holds it appeared (`visible_ms`: the file's mtime; the catalog's pointer moves to it
right after).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from bench.kdi_report import Commit

_METADATA = re.compile(r"^(?:v)?(\d+)(?:-[0-9a-f-]+)?\.metadata\.json$")


class IcebergTail:
    """The data snapshots of the table whose metadata folder is under `root` (the table's location, or a folder
    above it that holds one table), read as they appear."""

    def __init__(self, root: Path) -> None:
        self.table = root
        self.commits: dict[int, Commit] = {}  # by sequence number
        self.rows = 0
        self._seen: set[int] = set()  # snapshot ids
        self._read_files: set[str] = set()
        self._io = None

    def _metadata_files(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.table.rglob("*.metadata.json"):
            match = _METADATA.match(path.name)
            if match:
                found.append((int(match.group(1)), path))
        return sorted(found)

    def poll(self) -> int:
        """Read the metadata files not read yet; the rows the table holds now."""
        from pyiceberg.table import StaticTable

        for _, path in self._metadata_files():
            if str(path) in self._read_files:
                continue
            try:
                visible_ms = path.stat().st_mtime_ns // 1_000_000
                table = StaticTable.from_metadata(str(path))
            except (OSError, ValueError):  # not complete yet: the next poll reads it
                continue
            self._read_files.add(str(path))
            self._io = table.io
            for snapshot in table.metadata.snapshots:
                if snapshot.snapshot_id in self._seen:
                    continue
                self._seen.add(snapshot.snapshot_id)
                commit = Commit(snapshot.sequence_number or len(self.commits) + 1, snapshot.timestamp_ms, visible_ms)
                for manifest in snapshot.manifests(table.io):
                    if manifest.added_snapshot_id != snapshot.snapshot_id:
                        continue
                    for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                        if entry.snapshot_id == snapshot.snapshot_id and entry.status.value == 1:  # ADDED
                            data = entry.data_file
                            commit.files.append((data.file_path, int(data.record_count),
                                                 int(data.file_size_in_bytes)))
                if commit.files:
                    self.commits[commit.version] = commit
                    self.rows += sum(rows for _, rows, _ in commit.files)
        return self.rows

    def column(self, name: str) -> list[tuple[Commit, np.ndarray]]:
        """Each data snapshot with the values of column `name` in the files it added."""
        import pyarrow.parquet as pq

        out = []
        for version in sorted(self.commits):
            commit = self.commits[version]
            parts = [pq.read_table(_local(p), columns=[name]).column(0).to_numpy() for p, _, _ in commit.files]
            out.append((commit, np.concatenate(parts)))
        return out

    def shape(self) -> dict[str, int]:
        data = list(self.commits.values())
        return {"versions": len(data), "data_commits": len(data), "files": sum(len(c.files) for c in data),
                "bytes": sum(b for c in data for _, _, b in c.files)}


def _local(location: str) -> str:
    """A data file's local path from its location (`file:/...`, `file:///...` or a plain path)."""
    if location.startswith("file:"):
        rest = location[len("file:"):]
        return "/" + rest.lstrip("/")
    return location
