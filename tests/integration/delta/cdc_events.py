"""A source table kept in memory and the Debezium change events its changes produce, as Debezium's PostgreSQL
connector writes them with Kafka Connect's JSON converter (with `schemas.enable` or without): the key
`{"id": ...}`, the value's envelope `before`/`after`/`source`/`op`/`ts_ms`/`transaction`, a delete followed by a
tombstone (null value), a primary-key change as a delete (+ tombstone) of the old key and a create of the new
one, a truncate (`op` `t`, no key, no row). The table itself is the tests' oracle: the state the sink must reach.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.producer.producer import Producer

# Kafka Connect's schema types of the test table's columns.
_CONNECT_TYPES = {"id": "int32", "name": "string", "qty": "int64", "price": "double", "email": "string"}


def _connect_struct(columns: list[str], name: str, field_name: str | None = None) -> dict[str, Any]:
    fields = [{"type": _CONNECT_TYPES[c], "optional": c != "id", "field": c} for c in columns]
    out: dict[str, Any] = {"type": "struct", "fields": fields, "optional": field_name is not None, "name": name}
    if field_name:
        out["field"] = field_name
    return out


_SOURCE_SCHEMA = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source",
                  "field": "source", "fields": [
                      {"type": "string", "optional": False, "field": "version"},
                      {"type": "string", "optional": False, "field": "connector"},
                      {"type": "string", "optional": False, "field": "name"},
                      {"type": "int64", "optional": False, "field": "ts_ms"},
                      {"type": "string", "optional": True, "field": "snapshot"},
                      {"type": "string", "optional": False, "field": "db"},
                      {"type": "string", "optional": False, "field": "schema"},
                      {"type": "string", "optional": False, "field": "table"},
                      {"type": "int64", "optional": True, "field": "txId"},
                      {"type": "int64", "optional": True, "field": "lsn"}]}


@dataclass
class SourceTable:
    """A table with primary key `id` whose every change is sent to `topic` as a Debezium change event."""

    producer: Producer
    topic: str
    with_schema: bool = True
    columns: list[str] = field(default_factory=lambda: ["id", "name", "qty", "price"])
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    lsn: int = 1000
    table: str = "customers"

    def _source(self, snapshot: bool) -> dict[str, Any]:
        self.lsn += 8
        return {"version": "3.6.1.Final", "connector": "postgresql", "name": "dbserver1",
                "ts_ms": 1_700_000_000_000 + self.lsn, "snapshot": "true" if snapshot else "false",
                "db": "inventory", "schema": "public", "table": self.table, "txId": self.lsn // 8, "lsn": self.lsn}

    def _send(self, key: int | None, op: str, before: dict | None, after: dict | None, snapshot: bool = False) -> None:
        payload: dict[str, Any] = {"source": self._source(snapshot), "op": op, "ts_ms": 1_700_000_000_500 + self.lsn,
                                   "transaction": None}
        if op != "t":
            payload = {"before": before, "after": after, **payload}
        name = f"dbserver1.public.{self.table}"
        value: Any = payload
        if self.with_schema:
            fields = [] if op == "t" else [_connect_struct(self.columns, f"{name}.Value", "before"),
                                           _connect_struct(self.columns, f"{name}.Value", "after")]
            schema = {"type": "struct", "optional": False, "name": f"{name}.Envelope", "version": 2,
                      "fields": [*fields, _SOURCE_SCHEMA, {"type": "string", "optional": False, "field": "op"},
                                 {"type": "int64", "optional": True, "field": "ts_ms"}]}
            value = {"schema": schema, "payload": payload}
        self.producer.send(self.topic, self.encode_value(value), key=self._key(key))

    def encode_value(self, value: dict[str, Any]) -> bytes:
        """The envelope's bytes, as the JSON converter writes them (a registry format overrides this)."""
        return json.dumps(value).encode()

    def _key(self, key: int | None) -> bytes | None:
        if key is None:
            return None
        return self.encode_key(key)

    def encode_key(self, key: int) -> bytes:
        """The key's bytes, as the JSON converter writes them (a registry format overrides this)."""
        payload = {"id": key}
        if not self.with_schema:
            return json.dumps(payload).encode()
        schema = {"type": "struct", "optional": False, "name": f"dbserver1.public.{self.table}.Key",
                  "fields": [{"type": "int32", "optional": False, "field": "id"}]}
        return json.dumps({"schema": schema, "payload": payload}).encode()

    def _full(self, row: dict[str, Any]) -> dict[str, Any]:
        return {c: row.get(c) for c in self.columns}

    def snapshot(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.rows[row["id"]] = self._full(row)
            self._send(row["id"], "r", None, self.rows[row["id"]], snapshot=True)

    def insert(self, row: dict[str, Any]) -> None:
        self.rows[row["id"]] = self._full(row)
        self._send(row["id"], "c", None, self.rows[row["id"]])

    def update(self, key: int, **changes: Any) -> None:
        before = self.rows[key]
        self.rows[key] = self._full({**before, **changes})
        self._send(key, "u", None, self.rows[key])  # REPLICA IDENTITY DEFAULT: no `before` on updates

    def delete(self, key: int) -> None:
        del self.rows[key]
        self._send(key, "d", {"id": key, **{c: None for c in self.columns if c != "id"}}, None)
        self.producer.send(self.topic, None, key=self._key(key))  # the tombstone

    def resend(self, key: int, stale: dict[str, Any], lsn: int) -> None:
        """An update Debezium sends again after newer changes (a restart from an older position): the row as it
        was (`stale`) at source position `lsn`; the table's state does not change."""
        current, self.lsn = self.lsn, lsn - 8  # _source moves it on by 8
        try:
            self._send(key, "u", None, self._full(stale))
        finally:
            self.lsn = current

    def change_key(self, old: int, new: int) -> None:
        row = {**self.rows[old], "id": new}
        self.delete(old)
        self.insert(row)

    def add_column(self, name: str) -> None:
        self.columns.append(name)
        for row in self.rows.values():
            row[name] = None

    def truncate(self) -> None:
        self.rows.clear()
        self._send(None, "t", None, None)

    def flush(self) -> None:
        self.producer.flush()

    def expected(self) -> list[dict[str, Any]]:
        return [dict(self.rows[k]) for k in sorted(self.rows)]


def table_state(spark, table: str, columns: list[str]) -> list[dict[str, Any]]:
    """The Delta table's rows (the given columns, by id), read with Spark."""
    df = spark.read.format("delta").load(table)
    return [{c: (r[c] if c in df.columns else None) for c in columns} for r in df.orderBy("id").collect()]
