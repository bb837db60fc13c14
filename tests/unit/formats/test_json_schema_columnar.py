"""The column-wise path of JSON Schema values (json_schema/columnar.py) against the per-record path: random
payloads of a schema holding every mapping, written every way JSON allows and some it does not. Every record the
path takes has the per-record path's value; with validation on it takes none; whole batches decode to the same
batch, and fail with the same message, with the path on and off (KAFKA_SPARK_JSON_SCHEMA_BLOCK=0)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from harness.schema_registry import RegistryServer
from unit.formats.json_random import SCHEMA, decoder, payload

from kafka_spark.errors import KafkaSparkError, PayloadError
from kafka_spark.formats.columns import decode_batch
from kafka_spark.formats.groups import Group
from kafka_spark.formats.json_schema import columnar
from kafka_spark.formats.options import payload_options
from kafka_spark.formats.plan import plan_payloads
from kafka_spark.formats.registry.wire import frame

TOPIC = "events"
_SURROGATES = (b"\\ud800", b"\\udc00", b"\xed\xa0\x80")


def per_record(dec: Any, payloads: list[bytes]) -> list[Any]:
    out: list[Any] = []
    for p in payloads:
        try:
            out.append(dec.decode(1, (), p))
        except PayloadError as exc:
            out.append(exc)
    return out


def column_wise(dec: Any, payloads: list[bytes]) -> tuple[list[bool], list[Any]]:
    found = columnar.decode_group(dec, Group(1, (), 5), pa.array([frame(1, p) for p in payloads], pa.binary()))
    if found is None:
        return [False] * len(payloads), []
    exact, values = found
    return exact.tolist(), values.to_pylist()


@pytest.mark.parametrize("seed", range(4))
def test_every_record_taken_has_the_per_record_value(seed: int) -> None:
    rng = random.Random(seed)
    dec = decoder()
    payloads = [payload(rng) for _ in range(400)]
    exact, values = column_wise(dec, payloads)
    expected = per_record(dec, payloads)
    taken = [e for e, x in zip(expected, exact, strict=True) if x]
    assert all(not isinstance(e, PayloadError) for e in taken)
    assert repr(values) == repr(pa.array(taken, type=dec.arrow_type).to_pylist())  # -0.0 against 0.0
    assert sum(exact) > len(payloads) // 5  # a fifth come without anything spoiled


@pytest.mark.parametrize(("text", "taken"), [
    (b'{"i": 5, "n": 5, "s": "\\u00e9", "m": {"a": 1, "b": 2, "a": 3}, "free": {"x": [1, 2.50]}}', True),
    (b'{"i": 1.0}', False),  # an integer json.loads reads as 1.0: the per-record path takes it
    (b'{"n": 1e400}', False),  # infinity, per record
    (b'{"n": -0}', True),  # the integer 0 as a double: 0.0 on both paths
    (b'{"x": 1' + b"0" * 5000 + b"}", False),  # more digits than int() takes: json.loads refuses
    (b'{"x": "\xff"}', False),  # not UTF-8, in a field the schema lacks
    (b'{"s": "\xed\xa0\x80"}', False),  # an encoded surrogate, which json.loads takes
    (b'{"s": "\\ud800"}', False),  # a lone surrogate escape
    (b'\xef\xbb\xbf{"i": 1}', False),  # a byte-order mark
    (b'{"x": ' + b"[" * 300 + b"]" * 300 + b"}", False),  # deeper than the path takes
    (b"null", True), (b"  {}  ", True), (b'{"i": 1} x', False), (b"", False),
])
def test_what_json_loads_and_msgspec_read_differently_goes_per_record(text: bytes, taken: bool) -> None:
    dec = decoder()
    exact, values = column_wise(dec, [b'{"i": 0}', text])
    assert exact == [True, taken]
    if taken:
        assert values[1] == pa.array(per_record(dec, [text]), dec.arrow_type).to_pylist()[0]


def test_keys_given_twice_keep_the_last_value_in_the_first_place() -> None:
    dec = decoder()
    text = b'{"m": {"a": 1, "b": 2, "a": 3}, "i": 3, "i": 4, "free": {"k": 1, "k": [2]}}'
    exact, values = column_wise(dec, [text])
    assert exact == [True]
    assert values[0]["m"] == [("a", 3), ("b", 2)] and values[0]["i"] == 4 and values[0]["free"] == '{"k":[2]}'


def test_with_validation_nothing_is_taken() -> None:
    assert column_wise(decoder(validate=True), [b'{"i": 1}']) == ([False], [])


# ---- whole batches, the path on and off -----------------------------------------------------------------

@pytest.fixture(scope="module")
def registry() -> Iterator[tuple[RegistryServer, int]]:
    with RegistryServer() as server:
        client = SchemaRegistryClient({"url": server.url})
        yield server, client.register_schema(f"{TOPIC}-value", Schema(json.dumps(SCHEMA), "JSON"))


def kafka_batch(values: list[bytes | None]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": [TOPIC] * n, "partition": pa.array([1] * n, pa.int32()), "offset": list(range(70, 70 + n))})


def both_ways(monkeypatch: pytest.MonkeyPatch, server: RegistryServer, batch: pa.RecordBatch,
              **options: str) -> tuple[Any, Any]:
    parsed = payload_options({"valueFormat": "json-schema", "schema.registry.url": server.url, **options})
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


@pytest.mark.parametrize("validate", ["false", "true"])
def test_a_batch_decodes_the_same_both_ways(registry: tuple[RegistryServer, int], monkeypatch: pytest.MonkeyPatch,
                                            validate: str) -> None:
    server, schema_id = registry
    rng = random.Random(11)
    good = [frame(schema_id, json.dumps({"i": i, "m": {"k": i}}).encode()) for i in range(40)]
    bad: list[bytes | None] = [None, frame(schema_id, b'{"i": "x"}'), frame(schema_id, b"{"), b"\x01junk",
                               frame(424242, b'{"i": 1}'), frame(schema_id, b'{"i": 1.0}'), b"\x00\x00"]
    # without lone surrogates, which fail the whole batch on the per-record path ("do not build the column")
    spoilt = [p for p in (payload(rng) for _ in range(60)) if not any(s in p for s in _SURROGATES)]
    values = good + bad + [frame(schema_id, p) for p in spoilt[:30]]
    rng.shuffle(values)
    batch = kafka_batch(values)
    on, off = both_ways(monkeypatch, server, batch, mode="PERMISSIVE", validate=validate)
    assert not isinstance(on, tuple), on
    assert repr(on.to_pylist()) == repr(off.to_pylist()) and on.schema == off.schema
    assert on.column("valueError").null_count < len(batch) - 4
    on, off = both_ways(monkeypatch, server, batch, validate=validate)  # FAILFAST: the first bad record
    assert on == off and on[0] is PayloadError
