"""The source side of the Debezium proofs: PostgreSQL tables, a seeded random workload of transactions on them, and
each table's rows read back from PostgreSQL and from its Delta table in one comparable form.

The tables cover what a change stream carries: an integer key (`customers`, which gains a column mid-run), a
composite key (`orders`), numeric, text, boolean, timestamp, timestamptz and double columns and a truncate
(`measurements`, on a single-partition topic: Debezium orders a truncate only within its partition), and `ticks`,
whose last row marks the end of the workload in Kafka. The workload makes inserts, updates (one row or many),
deletes, primary-key changes (Debezium: a delete of the old key and a create of the new one), a key deleted and
inserted again in one transaction, values set to null, the added column and the truncate.

Values compare as Debezium sends them with the connector settings of tests/harness/kafka_connect.py: `numeric`
as its decimal string (compared as Decimal), `timestamp` as epoch microseconds, `timestamptz` as an ISO-8601
string (compared as the instant, in epoch microseconds), `double precision` as a JSON number.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

TOPIC_PREFIX = "dbserver1"
TABLES = ("customers", "orders", "measurements", "ticks")
# Each table's primary key, the order rows are compared in.
KEYS = {"customers": ("id",), "orders": ("order_id", "line"), "measurements": ("id",), "ticks": ("id",)}
# Columns whose Debezium form is not the value PostgreSQL's JSON shows: how both sides are made comparable.
KINDS = {("measurements", "amount"): "decimal", ("measurements", "seen_at"): "instant",
         ("measurements", "taken_at"): "micros", ("measurements", "ratio"): "float", ("ticks", "at"): "instant"}

SCHEMA = """
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, tier integer, active boolean);
CREATE TABLE orders (order_id integer, line integer, sku text NOT NULL, qty integer NOT NULL,
                     PRIMARY KEY (order_id, line));
CREATE TABLE measurements (id bigint PRIMARY KEY, amount numeric(12,3), note text, ok boolean, taken_at timestamp,
                           seen_at timestamptz, ratio double precision);
CREATE TABLE ticks (id integer PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
"""

# Text that JSON, SQL and Delta each escape their own way.
WORDS = ("plain", "it's", 'say "hi"', "back\\slash", "Grüße", "日本語", "tab\there", "line\nbreak", "emoji 🚀", "")
EPOCH = datetime(1970, 1, 1)


def topic(table: str) -> str:
    return f"{TOPIC_PREFIX}.public.{table}"


def text(value: str) -> str:
    """A SQL string literal (standard_conforming_strings: only the quote doubles)."""
    return "'" + value.replace("'", "''") + "'"


@dataclass
class Workload:
    """The keys each table holds, kept as the generated SQL changes them, so that every statement finds its row."""

    seed: int
    customers: set[int] = field(default_factory=set)
    orders: set[tuple[int, int]] = field(default_factory=set)
    measurements: set[int] = field(default_factory=set)
    ticks: int = 0
    email: bool = False
    truncated: bool = False
    next_id: int = 1000

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _new_id(self) -> int:
        self.next_id += 1 + self.rng.randrange(5)
        return self.next_id

    # ---- values ----

    def _maybe(self, literal: str) -> str:
        return "NULL" if self.rng.random() < 0.1 else literal

    def _word(self) -> str:
        return text(f"{self.rng.choice(WORDS)} {self.rng.randrange(1000)}")

    def _amount(self) -> str:
        return self._maybe(f"{Decimal(self.rng.randrange(-10**11, 10**11)).scaleb(-3):f}")

    def _timestamp(self) -> str:
        moment = EPOCH + timedelta(microseconds=self.rng.randrange(631_152_000, 2_208_988_800) * 10**6
                                   + self.rng.randrange(10**6))
        return self._maybe(f"'{moment.isoformat(sep=' ')}'::timestamp")

    def _timestamptz(self) -> str:
        zone = timezone(timedelta(minutes=self.rng.choice((-300, 0, 60, 330, 600))))
        moment = datetime.fromtimestamp(self.rng.randrange(631_152_000, 2_208_988_800), zone)
        moment += timedelta(microseconds=self.rng.randrange(10**6))
        return self._maybe(f"'{moment.isoformat()}'::timestamptz")

    def _ratio(self) -> str:
        value = self.rng.choice((-1, 1)) * self.rng.random() * 10.0 ** self.rng.randrange(-6, 7)
        return self._maybe(repr(value))

    def _bool(self) -> str:
        return self._maybe(self.rng.choice(("true", "false")))

    # ---- statements ----

    def _customer_values(self, key: int) -> str:
        email = f", {self._maybe(text(f'c{key}@example.com'))}" if self.email else ""
        return f"({key}, {self._word()}, {self._maybe(str(self.rng.randrange(5)))}, {self._bool()}{email})"

    def _insert_customer(self, key: int | None = None) -> str:
        key = key if key is not None else self._new_id()
        self.customers.add(key)
        return f"INSERT INTO customers VALUES {self._customer_values(key)};"

    def _order_values(self, key: tuple[int, int]) -> str:
        return f"({key[0]}, {key[1]}, {text(f'sku-{self.rng.randrange(100)}')}, {self.rng.randrange(1, 50)})"

    def _measurement_values(self, key: int) -> str:
        return (f"({key}, {self._amount()}, {self._maybe(self._word())}, {self._bool()}, {self._timestamp()}, "
                f"{self._timestamptz()}, {self._ratio()})")

    def seed_sql(self, customers: int = 30, orders: int = 12, measurements: int = 25) -> str:
        """The schema and the rows Debezium's snapshot reads."""
        sql = [SCHEMA]
        sql += [self._insert_customer(i) for i in range(1, customers + 1)]
        for order in range(1, orders + 1):
            for line in range(1, self.rng.randrange(2, 5)):
                self.orders.add((order, line))
                sql.append(f"INSERT INTO orders VALUES {self._order_values((order, line))};")
        for key in range(1, measurements + 1):
            self.measurements.add(key)
            sql.append(f"INSERT INTO measurements VALUES {self._measurement_values(key)};")
        sql.append(self.tick())
        return "\n".join(sql)

    def tick(self) -> str:
        """A row of `ticks`: its event in Kafka says every earlier transaction's events are there too."""
        self.ticks += 1
        return f"INSERT INTO ticks (id) VALUES ({self.ticks});"

    def _customer_change(self) -> list[str]:
        if not self.customers or self.rng.random() < 0.2:
            return [self._insert_customer()]
        key = self.rng.choice(sorted(self.customers))
        roll = self.rng.random()
        if roll < 0.45:
            sets = [f"name = {self._word()}", f"tier = {self._maybe(str(self.rng.randrange(9)))}",
                    f"active = {self._bool()}"]
            if self.email:
                sets.append(f"email = {self._maybe(text(f'u{key}@example.com'))}")
            chosen = self.rng.sample(sets, self.rng.randrange(1, len(sets) + 1))
            return [f"UPDATE customers SET {', '.join(chosen)} WHERE id = {key};"]
        if roll < 0.65:
            self.customers.discard(key)
            return [f"DELETE FROM customers WHERE id = {key};"]
        if roll < 0.85:  # the primary key changes: the row moves to another key
            new = self._new_id()
            self.customers.discard(key)
            self.customers.add(new)
            return [f"UPDATE customers SET id = {new} WHERE id = {key};"]
        # deleted and inserted again within one transaction
        self.customers.discard(key)
        return [f"DELETE FROM customers WHERE id = {key};", self._insert_customer(key)]

    def _order_change(self) -> list[str]:
        if not self.orders or self.rng.random() < 0.25:
            order = self.rng.randrange(1, 40)
            key = (order, 1 + max((line for o, line in self.orders if o == order), default=0))
            self.orders.add(key)
            return [f"INSERT INTO orders VALUES {self._order_values(key)};"]
        order, line = self.rng.choice(sorted(self.orders))
        roll = self.rng.random()
        if roll < 0.3:
            return [f"UPDATE orders SET qty = {self.rng.randrange(1, 99)}, sku = {text(f'sku-{line}-x')} "
                    f"WHERE order_id = {order} AND line = {line};"]
        if roll < 0.45:  # every line of one order in one statement
            return [f"UPDATE orders SET qty = qty + 1 WHERE order_id = {order};"]
        if roll < 0.7:
            self.orders.discard((order, line))
            return [f"DELETE FROM orders WHERE order_id = {order} AND line = {line};"]
        # one part of the composite key changes
        new = (order, line + 100) if roll < 0.85 else (self._new_id(), line)
        while new in self.orders:
            new = (new[0], new[1] + 100)
        self.orders.discard((order, line))
        self.orders.add(new)
        return [f"UPDATE orders SET order_id = {new[0]}, line = {new[1]} WHERE order_id = {order} AND line = {line};"]

    def _measurement_change(self) -> list[str]:
        if not self.measurements or self.rng.random() < 0.3:
            key = self._new_id()
            self.measurements.add(key)
            return [f"INSERT INTO measurements VALUES {self._measurement_values(key)};"]
        key = self.rng.choice(sorted(self.measurements))
        if self.rng.random() < 0.75:
            sets = [f"amount = {self._amount()}", f"note = {self._maybe(self._word())}", f"ok = {self._bool()}",
                    f"taken_at = {self._timestamp()}", f"seen_at = {self._timestamptz()}", f"ratio = {self._ratio()}"]
            chosen = self.rng.sample(sets, self.rng.randrange(1, len(sets) + 1))
            return [f"UPDATE measurements SET {', '.join(chosen)} WHERE id = {key};"]
        self.measurements.discard(key)
        return [f"DELETE FROM measurements WHERE id = {key};"]

    def step(self, n: int, total: int) -> str:
        """Transaction `n` of `total`: one to four changes; a third of the way the column is added to
        `customers`, two thirds of the way `measurements` is truncated (and refilled by later steps)."""
        sql: list[str] = []
        if n == total // 3:
            self.email = True
            sql.append("ALTER TABLE customers ADD COLUMN email text;")
        if n == 2 * total // 3:
            self.measurements.clear()
            self.truncated = True
            sql.append("TRUNCATE measurements;")
        for _ in range(self.rng.randrange(1, 5)):
            change = self.rng.choice((self._customer_change, self._customer_change, self._order_change,
                                      self._measurement_change))
            sql += change()
        return "BEGIN;\n" + "\n".join(sql) + "\nCOMMIT;"


# ---- the rows of both sides, comparable ----------------------------------------------------------------------


def _micros(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds


@dataclass(frozen=True)
class Comparison:
    """How the rows of PostgreSQL's tables and of their Delta tables are put side by side: `kinds` says which
    columns compare in a shared form ((table, column) -> decimal, float, json, days, micros or instant), `keys`
    each table's primary key (the rows' order)."""

    kinds: dict[tuple[str, str], str]
    keys: dict[str, tuple[str, ...]]

    def comparable(self, table: str, column: str, value: Any) -> Any:
        """One value of either side in the form both share (None stays None)."""
        kind = self.kinds.get((table, column))
        if value is None or kind is None:
            return value
        if kind == "decimal":
            return Decimal(str(value))
        if kind == "float":
            return float(value)
        if kind == "json":
            return json.loads(value) if isinstance(value, str) else value
        if kind == "days" and isinstance(value, date):
            return (value - date(1970, 1, 1)).days
        if kind == "micros" and isinstance(value, datetime):
            return _micros(value if value.tzinfo else value.replace(tzinfo=timezone.utc))
        if kind == "instant" and isinstance(value, str):  # Debezium's ZonedTimestamp, e.g. 2024-01-02T01:04:05.5Z
            return _micros(datetime.fromisoformat(value))
        return int(value)  # days or epoch microseconds, from PostgreSQL's SQL below or Debezium's int types

    def postgres_select(self, table: str, columns: list[str]) -> str:
        """A SELECT of `table`'s rows whose values PostgreSQL's JSON shows as Debezium sends them (or as
        `comparable` takes them): timestamps as epoch microseconds, dates as days, numerics and JSON as text (a
        JSON null stays apart from SQL's NULL)."""
        def expr(column: str) -> str:
            kind = self.kinds.get((table, column))
            if kind in ("instant", "micros"):
                return f"(extract(epoch FROM {column}) * 1000000)::bigint AS {column}"
            if kind == "days":
                return f"({column} - date '1970-01-01') AS {column}"
            if kind in ("decimal", "json"):
                return f"{column}::text AS {column}"
            return column

        return f"SELECT {', '.join(expr(c) for c in columns)} FROM {table} ORDER BY {', '.join(self.keys[table])}"

    def postgres_rows(self, pg: Any, table: str) -> list[dict[str, Any]]:
        columns = postgres_columns(pg, table)
        return [{c: self.comparable(table, c, r[c]) for c in columns}
                for r in pg.query_json(self.postgres_select(table, columns))]

    def delta_rows(self, path: str, table: str, columns: list[str]) -> list[dict[str, Any]]:
        """The Delta table's rows read by delta-rs (not Spark), `columns` of them (one it lacks is null: a column
        that was null in every change so far), in key order."""
        from deltalake import DeltaTable

        rows = DeltaTable(path).to_pyarrow_table().to_pylist()
        out = [{c: self.comparable(table, c, r.get(c)) for c in columns} for r in rows]
        return sorted(out, key=lambda r: tuple(r[k] for k in self.keys[table]))


def postgres_columns(pg: Any, table: str) -> list[str]:
    """The table's columns as PostgreSQL has them now, in order."""
    rows = pg.query_json("SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' "
                         f"AND table_name = '{table}' ORDER BY ordinal_position")
    return [r["column_name"] for r in rows]


COMPARISON = Comparison(KINDS, KEYS)
postgres_rows, delta_rows = COMPARISON.postgres_rows, COMPARISON.delta_rows
