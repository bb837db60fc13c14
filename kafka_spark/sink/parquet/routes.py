"""The direct writer over many tables in one read: each task writes its range as its topic's table's files.

A routed load or micro-batch reads the ranges of all its direct-written tables in one `pykafka` read;
the `directWriteTo` spec maps each topic to its table's `FileSpec` (and the secret, each topic to its
table's storage options). A task holds one topic-partition, so it writes to one table, and yields its file
rows with the topic added, which is how the driver gives each table its files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from kafka_spark.sink.parquet.files import FILE_ROWS_DDL, FileSpec, write_files

WRITER = "kafka_spark.sink.parquet.routes:write_routed"
ROUTED_ROWS_DDL = f"{FILE_ROWS_DDL}, topic string"


def routed_options(specs: Mapping[str, FileSpec]) -> dict[str, str]:
    """The internal `pykafka` options that make a read write each topic's range as `specs[topic]`'s files."""
    options = {"directWriteTo": json.dumps({"writer": WRITER, "rows": ROUTED_ROWS_DDL,
                                            "spec": {t: json.loads(s.to_json()) for t, s in specs.items()},
                                            "views": all(s.takes_views for s in specs.values())})}
    secrets = {t: dict(s.storage_options) for t, s in specs.items() if s.storage_options}
    if secrets:
        options["directWriteSecret"] = json.dumps(secrets)
    return options


def write_routed(batches: Iterable[pa.RecordBatch], r: Any, spec: str, secret: str | None
                 ) -> Iterator[pa.RecordBatch]:
    """The `directWriteTo` writer of a routed read: the task's range (`r`, an OffsetRange) written as its
    topic's table's files, each file row with the topic."""
    specs = json.loads(spec)
    storage = json.loads(secret) if secret else {}
    if r.topic not in specs:
        raise ValueError(f"the direct write of this read has no table for topic {r.topic!r}")
    table = FileSpec.from_json(json.dumps(specs[r.topic]),
                               json.dumps(storage[r.topic]) if r.topic in storage else None)
    for rows in write_files(batches, table, prefix=f"part-{r.partition:05d}"):
        yield rows.append_column("topic", pa.array([r.topic] * rows.num_rows, pa.string()))
