"""The replay guard's position (`__lsn`) of each Debezium connector's change events, as Spark computes it from the
envelope's `source`: one BIGINT per change that keeps the database log's order (the guard itself is tested end to
end with PostgreSQL's and MySQL's events in test_cdc.py and tests/integration/cdc)."""

from __future__ import annotations

import json

import pytest

from kafka_spark.delta.changes import parsed
from kafka_spark.sink.change_capture import ChangeCapture

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def positions(spark, sources: list[dict]) -> list[int | None]:
    rows = [("t", 0, i, None, b'{"id": 1}',
             json.dumps({"op": "u", "before": None, "after": {"id": 1}, "source": source}).encode())
            for i, source in enumerate(sources)]
    df = spark.createDataFrame(rows, "topic string, partition int, offset long, timestamp timestamp, key binary, "
                                     "value binary")
    out = parsed(df, ChangeCapture("debezium")).orderBy("offset").select("_lsn", "_bad").collect()
    assert [r["_bad"] for r in out] == [None] * len(sources)
    return [r["_lsn"] for r in out]


def test_sql_server_change_lsns_keep_their_order_and_misfits_have_no_position(spark):
    # VLF sequence : log block : slot, in hex; a later VLF starts again at small blocks
    ordered = ["00000027:00000758:0003", "00000027:00000758:0004", "00000027:00000760:0001",
               "00000027:00ffffff:ffff", "00000028:00000001:0001", "007fffff:00000001:0001"]
    got = positions(spark, [{"connector": "sqlserver", "change_lsn": lsn, "commit_lsn": lsn} for lsn in ordered])
    assert got == [0x27 * 2**40 + 0x758 * 2**16 + 3, 0x27 * 2**40 + 0x758 * 2**16 + 4,
                   0x27 * 2**40 + 0x760 * 2**16 + 1, 0x27 * 2**40 + 0xffffff * 2**16 + 0xffff,
                   0x28 * 2**40 + 2**16 + 1, 0x7fffff * 2**40 + 2**16 + 1]
    assert got == sorted(got)
    # Beyond the packing (a VLF sequence from 2^23, a block from 2^24), not an LSN, or none (a snapshot's rows):
    # no position, so the change always applies rather than being ordered wrongly.
    misfits = ["00800000:00000001:0001", "00000001:01000000:0001", "zz:1:1", "27:758", "27:758:3:1", None]
    assert positions(spark, [{"connector": "sqlserver", "change_lsn": lsn} for lsn in misfits]) == [None] * 6


def test_each_connectors_position(spark):
    got = positions(spark, [
        {"connector": "postgresql", "lsn": 24023128},
        {"connector": "mysql", "file": "mysql-bin.000003", "pos": 1542, "row": 2},
        {"connector": "mariadb", "file": "mariadb-bin.000012", "pos": 7, "row": 0},
        {"connector": "oracle", "scn": "2938471"},
        {"connector": "mongodb", "ord": 3},
    ])
    assert got == [24023128, 3 * 2**40 + 1542 * 256 + 2, 12 * 2**40 + 7 * 256, 2938471, None]
