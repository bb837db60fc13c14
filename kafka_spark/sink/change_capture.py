"""Change data capture: a keyed topic that describes a table's current state rather than rows to append.

`cdc` names how records are read: "debezium" (Debezium's JSON change events: `before`/`after`/`op`, with or
without the converter's `schema` part, keys from the record key) or "upsert" (any keyed topic, a compacted
one: the value is the row, a null value deletes its key). `key_columns` names the columns that identify a
row; without it they are the fields of the record key (a JSON object). `cdc_metadata` adds columns with each
row's last change (`__op`, `__source_ts_ms`, `__lsn`: the names Debezium's ExtractNewRecordState gives them).
`soft_delete` keeps deleted rows, marked `__deleted = true` (the name ExtractNewRecordState's rewrite mode gives
its flag; a boolean here), instead of removing them; a truncate marks every row so. `history` names a table
that every change is appended to as well (its row, operation and position, in Kafka order).

This module holds the settings and their checks, which every table format shares; applying a batch's
changes is the table format's (Delta's: delta/merge_commit.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafka_spark.errors import ConfigError

CDC_MODES = ("debezium", "upsert")
# The metadata columns, named as Debezium's ExtractNewRecordState SMT names them (`add.fields` with `__`).
OP_COLUMN = "__op"
SOURCE_TS_COLUMN = "__source_ts_ms"
LSN_COLUMN = "__lsn"
SOFT_DELETE_COLUMN = "__deleted"
METADATA_COLUMNS = (OP_COLUMN, SOURCE_TS_COLUMN, LSN_COLUMN, SOFT_DELETE_COLUMN)
# A column name the sink can quote in SQL and in a JSON path: no backquote, quote or control character.
_COLUMN = re.compile(r"^[^`'\"\x00-\x1f]{1,255}$")


@dataclass(frozen=True)
class ChangeCapture:
    """How a topic's records change a table (see the module docstring)."""

    mode: str
    key_columns: tuple[str, ...] = ()
    metadata: bool = False
    soft_delete: bool = False
    history: str | None = None  # the history table (a Delta path; `{topic}` is a routed table's topic)

    @property
    def debezium(self) -> bool:
        return self.mode == "debezium"

    def history_table(self, topic: str | None) -> str | None:
        """The history table of a table fed by `topic` (None: by several, or not known); ConfigError when the
        history names `{topic}` and there is no one topic to put there."""
        if self.history is None or "{topic}" not in self.history:
            return self.history
        if topic is None:
            raise ConfigError(f"cdc_history {self.history!r} names {{topic}}, but this table is fed by more than one "
                              "topic: give a history table of its own")
        return self.history.replace("{topic}", topic)


def change_capture(cdc: str | None, key_columns: Sequence[str] | str | None, metadata: bool = False,
                   soft_delete: bool = False, history: str | None = None) -> ChangeCapture | None:
    """The checked settings; None when the topic's records are appended (`cdc` unset)."""
    keys = _key_columns(key_columns)
    if cdc is None or not str(cdc).strip() or str(cdc).strip().lower() == "none":
        if keys:
            raise ConfigError("key_columns (--key-columns) names the key of a change stream: give cdc "
                              f"(--cdc {'|'.join(CDC_MODES)}) too")
        if metadata:
            raise ConfigError("cdc_metadata (--cdc-metadata) adds the columns of a change stream: give cdc "
                              f"(--cdc {'|'.join(CDC_MODES)}) too")
        if soft_delete:
            raise ConfigError("cdc_soft_delete (--cdc-soft-delete) marks the deletes of a change stream: give cdc "
                              f"(--cdc {'|'.join(CDC_MODES)}) too")
        if history:
            raise ConfigError("cdc_history (--cdc-history) keeps the changes of a change stream: give cdc "
                              f"(--cdc {'|'.join(CDC_MODES)}) too")
        return None
    mode = str(cdc).strip().lower()
    if mode not in CDC_MODES:
        raise ConfigError(f"cdc {cdc!r}: expected one of {', '.join(CDC_MODES)} (or none, to append records)")
    for name in keys:
        if not _COLUMN.match(name):
            raise ConfigError(f"key_columns: {name!r} is not a column name the sink can use (no quotes, "
                              "backquotes or control characters)")
        if name in METADATA_COLUMNS:
            raise ConfigError(f"key_columns: {name} is a metadata column of the sink")
    if len(set(keys)) != len(keys):
        raise ConfigError(f"key_columns names a column twice: {', '.join(keys)}")
    return ChangeCapture(mode, keys, bool(metadata), bool(soft_delete), history or None)


def _key_columns(given: Sequence[str] | str | None) -> tuple[str, ...]:
    if given is None:
        return ()
    if isinstance(given, str):
        given = given.split(",")
    return tuple(name.strip() for name in given if name and name.strip())


def check_change_options(capture: ChangeCapture | None, *, transform: object) -> None:
    """What change capture does not combine with, refused with the reason."""
    if capture is None:
        return
    if transform is not None:
        raise ConfigError("cdc applies change events as they are: a transform cannot be combined with it "
                          "(its rows would not be change events)")


def not_older(columns: tuple[str, ...], quoted: Callable[[str], str]) -> str:
    """A MERGE condition (source `s`, target `t`): the change is not older than the row by their source position
    (`__lsn`), so a change the source sends again after newer ones (Debezium restarting from an older position)
    leaves a newer row alone. Without a position on either side the change applies. `quoted` quotes a column as
    the MERGE's SQL dialect does."""
    assert LSN_COLUMN in columns
    lsn = quoted(LSN_COLUMN)
    return f"(s.{lsn} IS NULL OR t.{lsn} IS NULL OR s.{lsn} >= t.{lsn})"
