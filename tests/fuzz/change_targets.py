"""Fuzz target of a change stream's read tasks (sink/change_reader.py) and the driver's combine
(delta/task_changes.py). Registered in targets.py.

change-events: header byte (bit 0: upsert mode instead of Debezium; bit 1: metadata columns; bit 2: the key
column named), then records as lines, a key line and a value line each (`-` is a null key or value). The task
must yield its one row, changes or the reason it is unsure, and the combine must give changes or a reason:
neither raises, whatever the bytes.
"""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pyarrow as pa

from kafka_spark.delta.task_changes import TaskChanges, changes_of
from kafka_spark.offsets.ranges import OffsetRange
from kafka_spark.records import kafka_schema
from kafka_spark.sink.change_capture import ChangeCapture
from kafka_spark.sink.change_reader import ChangeSpec, read_changes

_SOURCES = ({"connector": "postgresql", "lsn": 1234, "ts_ms": 5}, {"connector": "mysql", "file": "b.000001", "pos": 9},
            {"connector": "oracle", "scn": "42"}, {"connector": "sqlserver", "change_lsn": "1:2:3"})


def change_seeds(rng: random.Random) -> list[bytes]:
    out = []
    for flags in range(8):
        lines = []
        for i in range(rng.randint(1, 6)):
            key = {"id": rng.randrange(4)}
            row = {"id": key["id"], "v": rng.choice([1, 2.5, "s", None, True]), "n": i}
            if flags & 1:
                value: Any = row if rng.random() < 0.8 else None
            else:
                op = rng.choice("crud")
                value = {"op": op, "after": None if op == "d" else row, "source": rng.choice(_SOURCES)}
                if rng.random() < 0.3:
                    value = {"schema": {"type": "struct"}, "payload": value}
            lines += [json.dumps(key).encode(), b"-" if value is None else json.dumps(value).encode()]
        out.append(bytes([flags]) + b"\n".join(lines))
    return out


def run_changes(data: bytes) -> object:
    if not data:
        return None
    flags, lines = data[0], data[1:].split(b"\n")
    pairs = [(lines[i], lines[i + 1] if i + 1 < len(lines) else b"-") for i in range(0, len(lines), 2)]
    records = [{"key": None if k == b"-" else k, "value": None if v == b"-" else v, "topic": "t", "partition": 0,
                "offset": i, "timestamp": i * 1000, "timestampType": 0} for i, (k, v) in enumerate(pairs)]
    capture = ChangeCapture("upsert" if flags & 1 else "debezium", ("id",) if flags & 4 else (), bool(flags & 2))
    spec = msgspec.json.encode(ChangeSpec(capture.mode, capture.key_columns, capture.metadata)).decode()
    table = pa.Table.from_pylist(records, schema=kafka_schema())
    rows = [row for batch in read_changes(table.to_batches(), OffsetRange("t", 0, 0, len(records)), spec, None)
            for row in batch.to_pylist()]
    assert len(rows) == 1 and (rows[0]["unsure"] is None) == (rows[0]["changes"] is not None)
    found = changes_of(rows, capture, None, None)
    assert isinstance(found, (TaskChanges, str))
    return found
