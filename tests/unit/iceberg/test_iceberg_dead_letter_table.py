"""The Iceberg dead-letter table's appends, with pyiceberg and the embedded catalog alone: one snapshot per batch,
never a batch twice, and the sink's last batch found from its rows once expiry took the snapshots naming it."""

from __future__ import annotations

import json

import pyarrow as pa

from kafka_spark.iceberg import IcebergCatalog
from kafka_spark.iceberg.dead_letter import DEAD_LETTERS_PREFIX, append_letters, written_batch
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.sink.position import SinkCommit


def _letters(sink: str, batch: int, offsets: list[int]) -> pa.Table:
    return pa.table({"sink": [sink] * len(offsets), "batch": pa.array([batch] * len(offsets), pa.int64()),
                     "offset": pa.array(offsets, pa.int64()), "error": ["not valid JSON"] * len(offsets)})


def test_each_batch_lands_once_and_expiry_leaves_the_rows_to_tell(tmp_path):
    location = IcebergLocation(IcebergCatalog(warehouse=str(tmp_path)), ("db", "bad"))
    for batch, offsets in ((0, [1, 3]), (2, [7])):
        assert append_letters(location, _letters("s", batch, offsets), SinkCommit("s", batch, {}, dead_letters=2))
    # a batch the table holds (or an earlier one) is not appended again
    assert not append_letters(location, _letters("s", 2, [7]), SinkCommit("s", 2, {}))
    assert not append_letters(location, _letters("s", 0, [1, 3]), SinkCommit("s", 0, {}))
    table = location.load()
    assert table.scan().to_arrow().num_rows == 3
    records = [s.summary.additional_properties for s in table.snapshots()]
    assert [json.loads(r[DEAD_LETTERS_PREFIX + "s"])["batch"] for r in records] == [0, 2]
    assert written_batch(table, "s") == 2 and written_batch(table, "other") is None

    # another writer's append, then expiry of every snapshot that named the sink
    table.append(_letters("other", 5, [0]))
    table = location.load()
    table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in table.snapshots()[:-1]]).commit()
    table = location.load()
    assert len(table.snapshots()) == 1 and written_batch(table, "s") == 2
    assert not append_letters(location, _letters("s", 2, [7]), SinkCommit("s", 2, {}))
    # new columns are added to the table's schema
    wider = _letters("s", 3, [9]).append_column("headers", pa.array([[{"key": "h", "value": b"v"}]]))
    assert append_letters(location, wider, SinkCommit("s", 3, {}))
    assert "headers" in location.load().schema().column_names and written_batch(location.load(), "s") == 3
