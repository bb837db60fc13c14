"""The column-wise path of Protobuf values (protobuf/columnar.py) against the per-record path: random messages of
every type and well-known type, under every option, canonical or not (truncated, extended, a byte flipped, two
messages merged, unknown fields, a field with another wire type, a map key given twice). Every record the path
takes has the per-record path's value; whole batches decode to the same batch, and fail with the same message,
with the path on and off (KAFKA_SPARK_PROTOBUF_BLOCK=0)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from google.protobuf import message_factory
from harness.schema_registry import RegistryServer
from unit.formats.protobuf_random import MUTATIONS, OPTION_SETS, PROTO, decoder, message, mutate

from kafka_spark.errors import KafkaSparkError, PayloadError
from kafka_spark.formats.columns import decode_batch
from kafka_spark.formats.groups import Group, framed_groups
from kafka_spark.formats.options import payload_options
from kafka_spark.formats.plan import plan_payloads
from kafka_spark.formats.protobuf import columnar
from kafka_spark.formats.protobuf.schema import message_indexes
from kafka_spark.formats.registry.wire import frame

pytest.importorskip("ptars")

TOPIC = "rows"


def per_record(dec: Any, indexes: tuple[int, ...], payloads: list[bytes]) -> list[Any]:
    """Each payload's value, or the PayloadError it raises, on the per-record path."""
    out: list[Any] = []
    for p in payloads:
        try:
            out.append(dec.decode(1, indexes, p))
        except PayloadError as exc:
            out.append(exc)
    return out


def column_wise(dec: Any, indexes: tuple[int, ...], payloads: list[bytes]) -> tuple[list[bool], list[Any]]:
    framed = pa.array([frame(1, p, indexes) for p in payloads], pa.binary())
    found = columnar.decode_group(dec, Group(1, indexes, 5 + 1 + len(indexes)), framed)
    if found is None:
        return [False] * len(payloads), []
    exact, values = found
    return exact.tolist(), values.to_pylist()


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "defaults")
def test_every_record_taken_has_the_per_record_value(options: dict[str, str]) -> None:
    rng = random.Random(hash(tuple(options)) & 0xFFFF)
    dec = decoder(options)
    cls = message_factory.GetMessageClass(dec.descriptor)
    indexes = message_indexes(dec.descriptor)
    clean = [message(cls, rng).SerializeToString() for _ in range(300)]
    payloads = [mutate(p, rng.choice(clean), rng.choice(MUTATIONS), rng) for p in clean]
    exact, values = column_wise(dec, indexes, payloads)
    expected = per_record(dec, indexes, payloads)
    taken = [e for e, x in zip(expected, exact, strict=True) if x]
    assert all(not isinstance(e, PayloadError) for e in taken)
    # repr: -0.0 against 0.0, NaN against NaN
    assert repr(values) == repr(pa.array(taken, type=dec.arrow_type).to_pylist())
    assert sum(exact) > len(payloads) // 10  # rich messages: a third of the unchanged ones come back whole


def test_non_canonical_payloads_go_per_record() -> None:
    dec = decoder()
    cls = message_factory.GetMessageClass(dec.descriptor)
    indexes = message_indexes(dec.descriptor)
    good = cls(i32=5, s="x", m_si={"a": 1, "b": 2}).SerializeToString()
    payloads = [
        good,
        good + b"\x0a\x01a",  # i32 written as bytes: the per-record path names it
        good + b"\xc0\x3e\x01",  # an unknown field
        cls(leaf={"name": "a"}).SerializeToString() + cls(leaf={"n": 3}).SerializeToString(),  # merged
        good + b"\xda\x01\x05\x0a\x01a\x10\x09",  # m_si["a"] again
        good[:-1],  # truncated
        cls(ts={"seconds": -1, "nanos": -5}).SerializeToString(),  # nanos out of range
        cls(ts={"seconds": 10**10}).SerializeToString(),  # beyond nanoseconds in 64 bits
        cls(ts={"seconds": 1, "nanos": 1500}, du={"seconds": -1, "nanos": -1}).SerializeToString(),
    ]
    exact, values = column_wise(dec, indexes, payloads)
    assert exact == [True, False, False, False, False, False, False, False, True]
    assert values == pa.array(per_record(dec, indexes, [payloads[0], payloads[-1]]), dec.arrow_type).to_pylist()
    assert values[0]["m_si"] == [("a", 1), ("b", 2)]


def test_map_entries_are_sorted_by_key_on_both_paths() -> None:
    dec = decoder()
    cls = message_factory.GetMessageClass(dec.descriptor)
    indexes = message_indexes(dec.descriptor)
    payload = cls(m_ls={9: "z", -4: "y", 300: "x", 2: "w"}, m_ul={2**31: {"name": "big"}, 1: {}}).SerializeToString()
    exact, values = column_wise(dec, indexes, [payload])
    [record] = per_record(dec, indexes, [payload])
    assert exact == [True] and values == [record]
    assert [k for k, _ in record["m_ls"]] == [-4, 2, 9, 300]
    assert [k for k, _ in record["m_ul"]] == [-(2**31), 1]  # uint32 keys read as Spark's INT, sorted as such


def test_readers_it_does_not_cover_are_left_whole() -> None:
    dec = decoder({"convert.any.fields.to.json": "true"})
    cls = message_factory.GetMessageClass(dec.descriptor)
    assert column_wise(dec, message_indexes(dec.descriptor), [cls(i32=1).SerializeToString()]) == ([False], [])
    assert "Any as JSON" in str(columnar._prepared[dec])


def test_a_writer_of_another_message_is_the_group_s_error() -> None:
    dec = decoder()
    framed = pa.array([frame(1, b"", (0,))], pa.binary())
    with pytest.raises(PayloadError, match=r"wrote message col\.Leaf, the reader reads col\.Row"):
        columnar.decode_group(dec, Group(1, (0,), 6), framed)


def test_the_framing_groups_by_schema_id_and_message_indexes() -> None:
    column = pa.array([
        frame(3, b"a", (0,)), frame(3, b"b", (2, 1)), None, b"\x00\x00\x00\x00\x03\x02\x00c",  # [0], long form
        frame(4, b"d", (0,)), b"\x00\x00\x00", b"\x00\x00\x00\x00\x03\x01\x00",  # short; count -1
        b"\x00\x00\x00\x00\x03\x02\x81\x01", frame(3, b"e", (0,)),  # an index of two bytes
    ], pa.binary())
    groups = framed_groups(column, protobuf=True)
    assert {g: r.tolist() for g, r in groups.items()} == {
        Group(3, (0,), 6): [0, 8], Group(3, (2, 1), 8): [1], Group(3, (0,), 7): [3], Group(4, (0,), 6): [4]}
    assert list(framed_groups(column, protobuf=False)) == [Group(3, (), 5), Group(4, (), 5)]


# ---- whole batches, the path on and off -----------------------------------------------------------------

V2 = PROTO.replace("optional Color optc = 57;", "optional Color optc = 57; string added = 58;")


@pytest.fixture(scope="module")
def registry() -> Iterator[tuple[RegistryServer, int, int]]:
    with RegistryServer() as server:
        client = SchemaRegistryClient({"url": server.url})
        old = client.register_schema(f"{TOPIC}-value", Schema(PROTO, "PROTOBUF"))
        new = client.register_schema(f"{TOPIC}-value", Schema(V2, "PROTOBUF"))
        yield server, old, new


def kafka_batch(values: list[bytes | None]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": [TOPIC] * n, "partition": pa.array([0] * n, pa.int32()), "offset": list(range(500, 500 + n))})


def both_ways(monkeypatch: pytest.MonkeyPatch, server: RegistryServer, batch: pa.RecordBatch,
              **options: str) -> tuple[Any, Any]:
    parsed = payload_options({"valueFormat": "protobuf", "valueMessageName": "col.Row",
                              "schema.registry.url": server.url, **options})
    assert parsed is not None
    plan = plan_payloads(parsed, (TOPIC,))
    out = []
    for switch in ("1", "0"):
        monkeypatch.setenv(columnar.SWITCH, switch)
        try:
            out.append(decode_batch(batch, plan))
        except KafkaSparkError as exc:
            out.append((type(exc), str(exc)))
    return out[0], out[1]


def batch_values(ids: tuple[int, int], seed: int) -> list[bytes | None]:
    rng = random.Random(seed)
    dec = decoder()
    cls = message_factory.GetMessageClass(dec.descriptor)
    indexes = message_indexes(dec.descriptor)
    old, new = ids
    good = [frame(rng.choice(ids), message(cls, rng).SerializeToString(), indexes) for _ in range(60)]
    bad: list[bytes | None] = [
        None, frame(old, b"\x08", indexes), frame(new, b"\x0a\x01a", indexes), b"\x01junk",
        frame(old, b"", (0,)), frame(424242, b"", indexes), b"\x00\x00\x00\x00",
        frame(new, b"\xc0\x3e\x01\x08\x02", indexes)]
    values = good + bad
    rng.shuffle(values)
    return values


@pytest.mark.parametrize("options", [{}, {"emit.default.values": "true", "enums.as.ints": "true"}],
                         ids=["defaults", "options"])
def test_a_batch_decodes_the_same_both_ways(registry: tuple[RegistryServer, int, int],
                                            monkeypatch: pytest.MonkeyPatch, options: dict[str, str]) -> None:
    server, old, new = registry
    batch = kafka_batch(batch_values((old, new), 7))
    on, off = both_ways(monkeypatch, server, batch, mode="PERMISSIVE", **options)
    assert repr(on.to_pylist()) == repr(off.to_pylist()) and on.schema == off.schema
    assert on.column("valueError").null_count == len(batch) - 6
    on, off = both_ways(monkeypatch, server, batch, **options)  # FAILFAST: the first bad record
    assert on == off and on[0] is PayloadError


def test_restart_mode_stops_at_the_same_record_both_ways(registry: tuple[RegistryServer, int, int],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    server, old, new = registry
    dec = decoder()
    cls = message_factory.GetMessageClass(dec.descriptor)
    indexes = message_indexes(dec.descriptor)
    payload = cls(i32=1).SerializeToString()
    batch = kafka_batch([frame(old, payload, indexes)] * 4 + [b"\x00"] + [frame(new, payload, indexes)] * 3)
    on, off = both_ways(monkeypatch, server, batch, valueSchemaVersion="1", schemaEvolutionMode="restart",
                        mode="PERMISSIVE")
    assert on == off
    assert "offset 505" in on[1] and "newer version" in on[1]
