"""A sink's committed Kafka position, whatever the table format: the record each commit carries, and the
copy kept beside the table.

Every commit of a sink holds the batch's offsets in the table's own log, in the same transaction as the
rows (how: each format's backend; Delta's `txn` + `userMetadata`). A log's old entries can be cleaned up,
so after each commit the same JSON is also kept at `<table>/_kafka_spark/offsets/<sink id>/<batch>.json`,
written from the committed truth only, on the table's own store (see table_files.py). A table's sinks are
the directories under `_kafka_spark/offsets/`: each sink writes its pending record there before its first
commit.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import offsets_from_json, offsets_to_json
from kafka_spark.sink.errors import TableLogError
from kafka_spark.sink.table_files import TableFiles

APP_PREFIX = "kafka-spark/"
FORMAT_VERSION = 1
_SINK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_sink_id(sink_id: str) -> str:
    """Validate a sink id: letters, digits, '.', '_' and '-' (it names files and the commits' application id)."""
    if not _SINK_ID.match(sink_id):
        raise ConfigError(f"sink id {sink_id!r} must be 1-100 characters of letters, digits, '.', '_' or '-'")
    return sink_id


def app_id(sink_id: str) -> str:
    """The application id a sink commits under (Delta's `txnAppId`)."""
    return APP_PREFIX + sink_id


@dataclass(frozen=True)
class SinkCommit:
    """One committed batch of a sink: the end offsets (next offset to read) of every partition it covers.

    `dead_letters`: how many of the batch's records went to the dead-letter table instead of the table.
    `history`: the batch's changes go to a change stream's history table too, after this commit.
    `freshness_ms`: how old the batch's records were when it was committed ({"p50", "p99", "max"}: commit
    time minus their Kafka timestamps), where the writer knows it before the commit (the direct writer).
    """

    sink_id: str
    batch: int
    offsets: dict[TopicPartition, int]
    start_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    run_id: str = ""
    records: int = 0
    committed_at_ms: int = 0
    dead_letters: int = 0
    freshness_ms: dict[str, int] | None = None
    history: bool = False  # a change stream's batch whose changes go to a history table too

    def to_json(self) -> str:
        return json.dumps({
            "kafka_spark": FORMAT_VERSION, "sink": self.sink_id, "batch": self.batch, "run": self.run_id,
            "records": self.records, "at": self.committed_at_ms, "dead_letters": self.dead_letters,
            "offsets": json.loads(offsets_to_json(self.offsets)),
            "start": json.loads(offsets_to_json(self.start_offsets)),
            **({"freshness_ms": self.freshness_ms} if self.freshness_ms is not None else {}),
            **({"history": True} if self.history else {}),
        }, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> SinkCommit:
        try:
            raw: dict[str, Any] = json.loads(text)
            return cls(
                sink_id=raw["sink"], batch=int(raw["batch"]), run_id=raw.get("run", ""),
                records=int(raw.get("records", 0)), committed_at_ms=int(raw.get("at", 0)),
                dead_letters=int(raw.get("dead_letters", 0)),
                offsets=offsets_from_json(json.dumps(raw["offsets"]), where),
                start_offsets=offsets_from_json(json.dumps(raw.get("start", {})), where),
                freshness_ms=_freshness(raw.get("freshness_ms")),
                history=raw.get("history") is True,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise TableLogError(f"{where}: not a kafka-spark offsets record ({exc})") from None


def _freshness(value: Any) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    return {k: int(value[k]) for k in ("p50", "p99", "max") if isinstance(value.get(k), (int, float))} or None


OFFSETS = "_kafka_spark/offsets"


def keep_pending(files: TableFiles, commit: SinkCommit) -> str:
    """Record a batch about to be committed (kept for diagnosis; never read as truth); where it went."""
    rel = f"{OFFSETS}/{commit.sink_id}/pending/{commit.batch}-{commit.run_id}.json"
    files.write_text(rel, commit.to_json())
    return files.describe(rel)


def keep_committed(files: TableFiles, commit: SinkCommit) -> None:
    """Keep a committed batch's offsets beside the table, and drop pending records up to it."""
    sink_dir = f"{OFFSETS}/{commit.sink_id}"
    files.write_text(f"{sink_dir}/{commit.batch}.json", commit.to_json())
    for name in files.list_files(f"{sink_dir}/pending"):
        head = name.split("-", 1)[0]
        if head.isdigit() and int(head) <= commit.batch:
            files.delete(f"{sink_dir}/pending/{name}")


def kept_commit(files: TableFiles, sink_id: str, batch: int) -> SinkCommit | None:
    """`batch` of `sink_id` as kept beside the table, or None when it is not there."""
    kept = f"{OFFSETS}/{sink_id}/{batch}.json"
    text = files.read_text(kept)
    return SinkCommit.from_json(text, files.describe(kept)) if text is not None else None


def kept_sink_ids(files: TableFiles) -> list[str]:
    """The ids of the sinks that have written to the table (or tried to)."""
    return [name for name in files.list_dirs(OFFSETS) if _SINK_ID.match(name)]


def names_batch(user_metadata: object, sink_id: str, batch: int) -> TypeGuard[str]:
    """Whether a commit's recorded text is `batch` of `sink_id` (other writers' can be any text)."""
    if not isinstance(user_metadata, str) or '"kafka_spark"' not in user_metadata:
        return False
    try:
        raw = json.loads(user_metadata)
    except ValueError:
        return False
    return isinstance(raw, dict) and raw.get("sink") == sink_id and raw.get("batch") == batch


def now_ms() -> int:
    return int(time.time() * 1000)
