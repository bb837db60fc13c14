"""What the sink reads of a Delta table's log: its version, an application's `txn` version, commitInfos.

The log is read through delta-rs (`deltalake`), which replays it with delta-kernel: classic, multi-part
and v2 checkpoints (with sidecars), logs whose old commits cleanup removed, and every reader feature
Delta 4.4 writes on path tables (deletion vectors, column mapping, type widening, variant, timestamps
without time zone, vacuumProtocolCheck); writer-only features (row tracking, domain metadata, liquid
clustering, in-commit timestamps, ...) change nothing for a reader. It needs no Spark, so the CLI reads
the same way as the sink, and it opens object stores from `storage_options`. Delta's own JVM API was
the alternative: its history is exact, but each call is a Spark job (about 1.5 s on two cores, as long
as a small micro-batch) and it has no public way to read a `txn` version.

delta-rs's `history()` lists every commit file from the first one asked for, newer ones included, and
labels the entries by counting down from the loaded snapshot's version: a label is wrong when a commit
lands between the load and the listing, or on an older snapshot. So a commit is recognised here by its
own content, and its version is found from snapshots (`version_reaching`), never from those labels.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kafka_spark.delta.errors import DeltaLogError

if TYPE_CHECKING:
    from deltalake import DeltaTable

T = TypeVar("T")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class TableState:
    """The Delta table at `location` (a path, a `file:` URI, or a store URI with `storage_options`).

    `refresh()` loads the latest snapshot; the other reads answer from the snapshot last loaded.
    """

    def __init__(self, location: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None) -> None:
        self.location = str(location)
        self.storage_options = dict(storage_options or {})
        self._table: DeltaTable | None = None

    def _open(self, version: int | None = None) -> DeltaTable | None:
        # Imported here: every CLI command imports this module, few read a table.
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError, TableNotFoundError

        try:
            return DeltaTable(self.location, version=version, storage_options=self.storage_options or None)
        except TableNotFoundError:
            return None
        except DeltaError as exc:
            raise DeltaLogError(f"{self.location}: the Delta log cannot be read: {exc}") from None

    def refresh(self) -> int | None:
        """Load the latest snapshot; its version, or None when no Delta table is at the location."""
        self._table = self._open()
        return self.version

    @property
    def version(self) -> int | None:
        """The version of the loaded snapshot (None: no table, or nothing loaded yet)."""
        return self._table.version() if self._table is not None else None

    def txn_versions(self, app_ids: Iterable[str]) -> dict[str, int]:
        """The last `txnVersion` each application committed, for those that have committed."""
        if self._table is None:
            return {}
        out = {}
        for app_id in app_ids:
            version = self._read(self._table.transaction_version, app_id)
            if version is not None:
                out[app_id] = version
        return out

    def commit_infos(self, since: int) -> list[dict[str, Any]]:
        """The commitInfo of every retained commit from version `since` on, newest first, unlabelled."""
        if self._table is None or since > self._table.version():
            return []
        infos = self._read(self._table.history, self._table.version() - max(since, 0) + 1)
        return [{k: v for k, v in info.items() if k != "version"} for info in infos]

    def version_reaching(self, app_id: str, txn_version: int, after: int) -> int | None:
        """The first version after `after`, up to the loaded one, where `app_id` has reached `txn_version`."""
        latest = self.version
        if latest is None:
            return None
        for version in range(after + 1, latest + 1):
            table = self._table if version == latest else self._open(version)
            reached = self._read(table.transaction_version, app_id) if table is not None else None
            if reached is not None and reached >= txn_version:
                return version
        return None

    def _read(self, method: Callable[..., T], *args: Any) -> T:
        from deltalake.exceptions import DeltaError

        try:
            return method(*args)
        except DeltaError as exc:
            raise DeltaLogError(f"{self.location}: the Delta log cannot be read: {exc}") from None
