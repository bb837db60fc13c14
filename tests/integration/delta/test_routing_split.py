"""One topic split into several Delta tables by a header or by a field of its JSON values: each table holds
exactly the records whose value names it (the rest in the default table), batch and stream; a record no
table takes, with no default, fails its tables' commits by name and nothing is committed for that topic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from delta_support import latest_offsets_of
from deltalake import DeltaTable
from test_routing import create, expected_keys, keys_in

from kafka_spark.delta import committed_position, load_tables, start_stream
from kafka_spark.sink import LoadOptions, MultiLoadResult, Routing, Split, StreamOptions, TableCommitError
from kafka_spark.sink.errors import UnroutedRecordError

KINDS = ("click", "view", "buy", None)  # None: no header / no field


def send_events(producer, topic: str, start: int, count: int) -> None:
    """Record i carries kind KINDS[i % 4] in an `event-type` header and in its JSON value's `type`."""
    for i in range(start, start + count):
        kind = KINDS[i % len(KINDS)]
        value = {"i": i, **({"type": kind} if kind else {})}
        producer.send(topic, json.dumps(value).encode(), key=str(i).encode(),
                      headers=[("event-type", kind.encode())] if kind else [])
    producer.flush()


def kinds_in(table: Path) -> dict[int, str | None]:
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["value"]).to_pylist()
    return {json.loads(r["value"])["i"]: json.loads(r["value"]).get("type") for r in rows}


def test_a_topic_split_by_header_and_by_json_field_into_tables(spark, kafka, producer, topic_name, tmp_path):
    by_header, by_field, plain = (f"{topic_name[-8:]}-split-{x}" for x in ("h", "f", "p"))
    create(kafka.bootstrap, [by_header, by_field], partitions=2)
    create(kafka.bootstrap, [plain])
    for topic in (by_header, by_field, plain):
        send_events(producer, topic, 0, 12)
    lake = tmp_path / "lake"
    routing = Routing(template=f"{lake}/{{topic}}", splits={
        by_header: Split(by="header:event-type", tables={"click": f"{lake}/clicks", "view": f"{lake}/views"},
                         default=f"{lake}/{{topic}}-other"),
        by_field: Split(by="get_json_object(CAST(value AS STRING), '$.type')",
                        tables={"click": f"{lake}/f-clicks", "view": f"{lake}/f-views", "buy": f"{lake}/f-buys"}),
    })
    opts = LoadOptions(kafka={"bootstrap.servers": kafka.bootstrap}, topics=[by_header, by_field, plain],
                       sink_id="split", routing=routing, include_headers=True, writer="auto")

    # The field split has no default: its records without a type fail its three tables, by name.
    with pytest.raises(TableCommitError) as info:
        load_tables(spark, opts)
    failed = {r.table: r.error for r in info.value.result.failed}
    assert set(failed) == {f"{lake}/f-clicks", f"{lake}/f-views", f"{lake}/f-buys"}
    assert all("UnroutedRecordError" in e and "split value None" in e for e in failed.values()), failed
    assert isinstance(info.value.__cause__, UnroutedRecordError) and info.value.__cause__.value is None
    assert all(committed_position(t, "split") is None for t in failed)
    committed = {r.table: r for r in info.value.result.committed}
    assert committed[f"{lake}/{plain}"].writer == "direct"
    assert committed[f"{lake}/clicks"].writer == "spark"
    assert "split" in (committed[f"{lake}/clicks"].writer_reason or "")

    with_default = Routing(template=routing.template, splits={
        **routing.splits, by_field: Split(by=routing.splits[by_field].by, tables=routing.splits[by_field].tables,
                                          default=f"{lake}/f-other")})
    # The header split's tables and the plain one committed above (fail-fast lets the batch's commits finish).
    second = load_tables(spark, LoadOptions(**{**opts.__dict__, "routing": with_default}))
    assert second.status == "committed" and second.rows == 12
    for topic, tables in ((by_header, {"click": "clicks", "view": "views", None: f"{by_header}-other"}),
                          (by_field, {"click": "f-clicks", "view": "f-views", "buy": "f-buys", None: "f-other"})):
        held: dict[int, str | None] = {}
        for kind, name in tables.items():
            found = kinds_in(lake / name)
            # The default table takes the kinds no table names (`buy` by header) and records with none.
            assert all(k == kind or (kind is None and k not in tables) for k in found.values()), (name, found)
            assert not set(found) & set(held), name
            held.update(found)
            assert committed_position(str(lake / name), "split").offsets == latest_offsets_of(kafka.bootstrap, topic)
        assert sorted(held) == list(range(12)), topic
    assert set(keys_in(lake / plain)) == expected_keys(kafka.bootstrap, plain)

    # The stream carries on from the tables' positions: each table gets exactly its new records.
    send_events(producer, by_header, 12, 8)
    triggers: list[MultiLoadResult] = []
    stream = StreamOptions(**{**opts.__dict__, "routing": with_default, "trigger": "available-now",
                              "checkpoint": str(tmp_path / "checkpoint")}, on_trigger=lambda _, r: triggers.append(r))
    query = start_stream(spark, stream)
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert query.exception() is None
    held = {}
    for kind, name in {"click": "clicks", "view": "views", None: f"{by_header}-other"}.items():
        found = kinds_in(lake / name)
        assert all(k == kind or (kind is None and k == "buy") or k is kind for k in found.values()), (name, found)
        assert not set(found) & set(held)
        held.update(found)
    assert sorted(held) == list(range(20))
    assert sum(r.rows for t in triggers for r in t.committed) == 8
