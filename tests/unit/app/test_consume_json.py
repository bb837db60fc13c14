"""How `kafka-spark consume` prints decoded values: valid JSON, exact decimals, ISO-8601 dates and times,
maps as objects, bytes as base64, and the numbers JSON lacks as strings."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from kafka_spark.cli.decoded_json import json_text

ORDER = pa.struct([
    ("id", pa.int64()), ("customer", pa.string()), ("amount", pa.decimal128(12, 2)),
    ("placed", pa.timestamp("us", tz="UTC")), ("local", pa.timestamp("us")), ("day", pa.date32()),
    ("at", pa.time64("us")), ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.int64())),
    ("paid", pa.bool_()), ("address", pa.struct([("street", pa.string()), ("zip", pa.string())])),
    ("score", pa.float64()), ("digest", pa.binary()),
])


def rendered(values: list, kind: pa.DataType) -> list[str]:
    """Each value through an Arrow column of `kind`, as the command gets it from a decoded batch."""
    return [json_text(v, kind) for v in pa.array(values, type=kind).to_pylist()]


def test_an_order_prints_as_readable_json():
    order = {
        "id": 7, "customer": "Zoë \"Z\"", "amount": Decimal("1234567890.05"),
        "placed": dt.datetime(2026, 1, 2, 3, 4, 5, 250000, tzinfo=dt.timezone.utc),
        "local": dt.datetime(2026, 1, 2, 3, 4, 5, 123456), "day": dt.date(2026, 1, 31),
        "at": dt.time(12, 30, 0, 250000), "tags": ["a", "b"], "attrs": [("n", 1), ("m", -2)], "paid": True,
        "address": {"street": "1 Main St", "zip": None}, "score": 0.1, "digest": b"\x00\xff",
    }
    (text,) = rendered([order], ORDER)
    assert text == (
        '{"id":7,"customer":"Zoë \\"Z\\"","amount":1234567890.05,"placed":"2026-01-02T03:04:05.250Z",'
        '"local":"2026-01-02T03:04:05.123456","day":"2026-01-31","at":"12:30:00.250","tags":["a","b"],'
        '"attrs":{"n":1,"m":-2},"paid":true,"address":{"street":"1 Main St","zip":null},"score":0.1,'
        '"digest":"AP8="}')
    parsed = json.loads(text, parse_float=Decimal)
    assert parsed["amount"] == Decimal("1234567890.05")  # exact: never a binary fraction
    assert parsed["score"] == Decimal("0.1")


def test_nulls_and_timestamps_in_other_zones():
    kind = pa.struct([("t", pa.timestamp("us", tz="Europe/Paris")), ("d", pa.decimal128(5, 3))])
    values = [None, {"t": None, "d": None},
              {"t": dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc), "d": Decimal("-0.001")}]
    assert rendered(values, kind) == ["null", '{"t":null,"d":null}', '{"t":"2026-06-01T12:00:00.000Z","d":-0.001}']


@pytest.mark.parametrize(("value", "text"), [
    (float("nan"), '"NaN"'), (float("inf"), '"Infinity"'), (float("-inf"), '"-Infinity"'), (1e300, "1e+300"),
    (-0.0, "-0.0"),
])
def test_doubles_json_cannot_hold_become_strings(value: float, text: str):
    assert rendered([value], pa.float64()) == [text]
    json.loads(text)


def test_decimals_keep_their_scale_in_plain_notation():
    assert rendered([Decimal("0"), Decimal("1E-7"), Decimal("-12.5")], pa.decimal128(20, 10)) == [
        "0.0000000000", "0.0000001000", "-12.5000000000"]


def test_floats_print_as_their_shortest_text():
    assert rendered([0.1, 3.0, 1e30, float("nan")], pa.float32()) == ["0.1", "3.0", "1e+30", '"NaN"']


def test_map_keys_that_are_not_text_and_nested_lists():
    kind = pa.struct([("by_id", pa.map_(pa.int32(), pa.list_(pa.struct([("x", pa.int8())])))),
                      ("raw", pa.map_(pa.binary(), pa.bool_()))])
    (text,) = rendered([{"by_id": [(1, [{"x": 1}, None]), (2, [])], "raw": [(b"k", False)]}], kind)
    assert text == '{"by_id":{"1":[{"x":1},null],"2":[]},"raw":{"aw==":false}}'
