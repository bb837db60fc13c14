"""The direct writer's JSON parser (`SparkJson`) against Spark's own `from_json`, as the Delta sink calls it
(PERMISSIVE, with a corrupt-record column): every value the parser accepts, Spark parses to the same row and
does not mark bad; every value it is not sure of goes to Spark. Hand-picked edge cases and a seeded random
corpus (well-formed, mistyped, reformatted and broken values) over a schema of every type it serves."""

from __future__ import annotations

import decimal
import json
import math
import random
from typing import Any

import pyarrow as pa
import pytest

from kafka_spark.formats.spark_json.parser import NotCertain, SparkJson, certain_schema_reason

DDL = ("i INT, l BIGINT, t TINYINT, sh SMALLINT, d DOUBLE, f FLOAT, s STRING, b BOOLEAN, a DECIMAL(10,2), "
       "tags ARRAY<STRING>, ns ARRAY<BIGINT>, m MAP<STRING,INT>, st STRUCT<x: INT, y: STRING, z: ARRAY<DOUBLE>>")

EDGES = [
    '{"i":1,"l":2,"d":1.5,"s":"x","b":true}', '{"i":1.0}', '{"i":"1"}', '{"i":2147483647}', '{"i":2147483648}',
    '{"i":-2147483648}', '{"l":9223372036854775807}', '{"l":9223372036854775808}', '{"t":127}', '{"t":200}',
    '{"t":-128}', '{"sh":32768}', '{"d":1}', '{"d":"NaN"}', '{"d":NaN}', '{"d":Infinity}', '{"d":-Infinity}',
    '{"d":1e400}', '{"d":-0.0}', '{"d":9007199254740993}', '{"d":0.1}', '{"f":0.1}', '{"f":16777217}',
    '{"f":1e39}', '{"f":3.4028235e38}', '{"f":1.4e-45}', '{"s":1}', '{"s":{"a":1}}', '{"s":true}', '{"s":null}',
    '{"s":"\\ud800"}', '{"s":"a\\u0000b"}', '{"s":"\\u00e9\\ud83d\\ude00"}', '{"s":"é"}', '{"b":1}',
    '{"b":"true"}', "{'i': 1}", '{"i":01}', '{"i":1} xyz', '{"i":1}{"i":2}', '[{"i":1}]', "[]", "null", "1",
    '"abc"', "", "   ", "{}", '{"I":1}', '{"i":1,"i":2}', '{"i":1,"i":"x"}', '{"i":-0}', '{"i":1,}', "{i:1}",
    '{"i":1}/*c*/', '{"i":+1}', '{"d":.5}', '{"d":5.}', '{"i":1e2}', '{"a":1.234}', '{"a":1.235}', '{"a":-1.235}',
    '{"a":1.225}', '{"a":99999999.995}', '{"a":12345678.5}', '{"a":123456789}', '{"a":"1.5"}', '{"a":1e2}',
    '{"a":-0.00}', '{"a":1e-5}', '{"a":NaN}', '{"tags":["a",null]}', '{"tags":"a"}', '{"tags":[1]}',
    '{"ns":[1,null,2]}', '{"ns":[1.5]}', '{"m":{"k":1,"j":null}}', '{"m":{"k":1,"k":2}}', '{"m":{}}',
    '{"m":{"k":"1"}}', '{"st":{"x":1,"y":"z","z":[1,2.5,null]}}', '{"st":null}', '{"st":{"x":"bad"}}',
    '{"st":[{"x":1}]}', '{"st":{"x":1,"x":2}}', '{"st":{"X":1}}', '\t{"i":1}\n', '\ufeff{"i":1}', '{"i":1}\n\n',
    '{"_kafka_spark_corrupt":"zz","i":3}', '{"i":[' * 3 + "]" * 3 + "}", '{"other":[1,{"x":NaN}],"i":5}',
    '{"i":1,"extra":{"deep":[1,2,{"a":"b"}]}}', '{"s":"line\\nbreak \\"quoted\\" \\\\ \\/"}',
    '{"a":"x","a":1.5}', '{"a":1.5,"a":"x"}', '{"a":1.5,"a":2.25}', '{"a":1.5,"\\u0061":"x"}', '{"i":"x","i":1}',
    '{"i":1,"i":2}', '{"s":"x","s":1}', '{"st":{"x":1},"st":{"y":"z"}}', '{"a":" 1.5"}', '{"a":"1_000"}',
]


def _random_value(rng: random.Random, kind: str) -> Any:
    """A JSON value for a field of `kind`, usually fitting, sometimes not."""
    if rng.random() < 0.08:
        return rng.choice([None, "x", 1.5, 7, True, [], {}, 10**20, -(10**19), "1", float("nan")])
    return {
        "i": lambda: rng.randint(-(2**31), 2**31 - 1),
        "l": lambda: rng.randint(-(2**63), 2**63 - 1),
        "t": lambda: rng.randint(-128, 127),
        "sh": lambda: rng.randint(-(2**15), 2**15 - 1),
        "d": lambda: rng.choice([rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randint(-300, 300),
                                 rng.randint(-99, 99)]),
        "f": lambda: rng.choice([rng.uniform(-1e3, 1e3), round(rng.uniform(-100, 100), rng.randint(0, 7))]),
        "s": lambda: "".join(rng.choice("ab é\"\\\n\t😀{}[]:,") for _ in range(rng.randint(0, 12))),
        "b": lambda: rng.random() < 0.5,
        "a": lambda: decimal.Decimal(rng.randint(-(10**10), 10**10)).scaleb(-rng.randint(0, 4)),
        "tags": lambda: [rng.choice(["a", "bb", None, "ü"]) for _ in range(rng.randint(0, 3))],
        "ns": lambda: [rng.choice([rng.randint(-5, 5), None]) for _ in range(rng.randint(0, 3))],
        "m": lambda: {k: rng.choice([rng.randint(-9, 9), None]) for k in rng.sample("pqrs", rng.randint(0, 3))},
        "st": lambda: {"x": rng.randint(-9, 9), "y": rng.choice(["q", None]), "z": [rng.random(), None]},
    }[kind]()


def _random_text(rng: random.Random) -> str:
    fields = ["i", "l", "t", "sh", "d", "f", "s", "b", "a", "tags", "ns", "m", "st"]
    record = {k: _random_value(rng, k) for k in rng.sample(fields, rng.randint(0, len(fields)))}
    if rng.random() < 0.2:
        record["unknown"] = {"nested": [1, "two", None]}
    numbers: list[str] = []

    def placeholder(value: Any) -> str:
        # a decimal goes out as a JSON number with its own digits
        numbers.append(str(value))
        return f"@{len(numbers) - 1}@"

    text = json.dumps(record, default=placeholder, ensure_ascii=rng.random() < 0.5,
                      indent=rng.choice([None, None, 1]), separators=rng.choice([None, (",", ":")]))
    for i, number in enumerate(numbers):
        text = text.replace(f'"@{i}@"', number)
    roll = rng.random()
    if roll < 0.05:
        text = text[: rng.randint(0, len(text))]  # truncated
    elif roll < 0.08:
        text = text + rng.choice([" ", "x", "}", "\n"])
    return text


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    rng = random.Random(20261126)
    return EDGES + [_random_text(rng) for _ in range(1500)]


def _spark_rows(spark, ddl: str, texts: list[str]) -> list[tuple[bool, dict[str, Any] | None]]:
    """Per value: whether the Delta sink's `from_json` call marks it bad, and its row."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DataType, StringType, StructField, StructType

    struct = DataType.fromDDL(ddl)
    schema = StructType([*struct.fields, StructField("_corrupt", StringType())])
    frame = spark.createDataFrame([(i, t.encode("utf-8", "surrogatepass")) for i, t in enumerate(texts)],
                                  "n int, value binary")
    parsed = F.from_json(F.col("value").cast("string"), schema,
                         {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    out: list[tuple[bool, dict[str, Any] | None]] = [(True, None)] * len(texts)
    for row in frame.select("n", parsed.alias("p")).collect():
        p = row["p"]
        bad = p is None or p["_corrupt"] is not None
        out[row["n"]] = (bad, None if bad else {k: p[k] for k in struct.fieldNames()})
    return out


def _ours(parser: SparkJson, text: str) -> dict[str, Any] | None:
    """Our row for one value, or None when the parser leaves it to Spark."""
    try:
        column = parser.parse(pa.array([text.encode("utf-8", "surrogatepass")], pa.binary()))
    except NotCertain:
        return None
    return column.to_pylist()[0]


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, float) and isinstance(ours, float):
        return (math.isnan(ours) and math.isnan(theirs)) or (ours == theirs and math.copysign(1, ours) ==
                                                              math.copysign(1, theirs))
    if hasattr(theirs, "asDict"):
        theirs = theirs.asDict()
    if isinstance(theirs, dict) and isinstance(ours, list):  # an Arrow map comes back as pairs
        ours = dict(ours)
    if isinstance(theirs, dict):
        return (isinstance(ours, dict) and ours.keys() == theirs.keys()
                and all(_same(ours[k], theirs[k]) for k in theirs))
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(_same, ours, theirs))
    return type(ours) is type(theirs) and ours == theirs


def test_schema_reasons(spark) -> None:
    from pyspark.sql.types import DataType

    assert certain_schema_reason(DataType.fromDDL(DDL).json()) is None
    assert certain_schema_reason(DataType.fromDDL("ts TIMESTAMP, i INT").json()) == "field ts is TIMESTAMP"
    assert certain_schema_reason(DataType.fromDDL("o STRUCT<d: DATE>").json()) == "field d is DATE"
    assert certain_schema_reason(DataType.fromDDL("m MAP<INT,STRING>").json()) == "field m is a map with INTEGER keys"
    assert certain_schema_reason(DataType.fromDDL("raw BINARY").json()) == "field raw is BINARY"
    # msgspec decodes unless a DECIMAL or FLOAT sits below the top level (then Python's own scanner does)
    assert SparkJson(DataType.fromDDL(DDL).json())._typed is not None
    assert SparkJson(DataType.fromDDL("o STRUCT<a: DECIMAL(5,2)>").json())._typed is None
    assert SparkJson(DataType.fromDDL("xs ARRAY<FLOAT>").json())._typed is None


@pytest.mark.parametrize("typed", [False, True], ids=["stdlib", "msgspec"])
def test_accepted_values_parse_as_spark_does(spark, corpus: list[str], typed: bool) -> None:
    from pyspark.sql.types import DataType

    parser = SparkJson(DataType.fromDDL(DDL).json(), typed=typed)
    spark_rows = _spark_rows(spark, DDL, corpus)
    accepted = spark_good = 0
    for text, (bad, theirs) in zip(corpus, spark_rows, strict=True):
        ours = _ours(parser, text)
        spark_good += not bad
        if ours is None:
            continue
        accepted += 1
        assert not bad, f"Spark marks {text!r} bad, the parser accepted it as {ours}"
        assert _same(ours, theirs), f"{text!r}: parser {ours} != Spark {theirs}"
    # Most values Spark parses, the parser serves too (else every batch would fall back).
    assert spark_good > 600
    assert accepted >= 0.9 * spark_good, f"the parser served {accepted} of {spark_good} good values"


def test_a_batch_with_one_uncertain_value_names_it(spark) -> None:
    from pyspark.sql.types import DataType

    parser = SparkJson(DataType.fromDDL("i INT").json())
    column = pa.array([b'{"i":1}', None, b'{"i":"2"}', b"{}"], pa.binary())
    with pytest.raises(NotCertain) as caught:
        parser.parse(column)
    assert caught.value.row == 2 and "field i" in caught.value.reason
    parsed = parser.parse(pa.array([b'{"i":1}', None, b"{}"], pa.binary()))
    assert parsed.to_pylist() == [{"i": 1}, None, {"i": None}]
    assert parsed.null_count == 1


def test_a_batch_parses_as_its_values_do_one_by_one_and_as_spark_does(spark, corpus: list[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql.types import DataType

    import kafka_spark.formats.spark_json.typed as typed

    parser = SparkJson(DataType.fromDDL(DDL).json(), typed=True)
    singles = [(text, _ours(parser, text)) for text in corpus]
    served = [(text, row) for text, row in singles if row is not None]
    # Among them decimals that need rounding: the batch's decimals take the careful path.
    batch = parser.parse(pa.array([t.encode("utf-8", "surrogatepass") for t, _ in served], pa.binary()))
    assert all(_same(ours, row) for ours, (_, row) in zip(batch.to_pylist(), served, strict=True))
    # Decimals that all fit exactly are parsed by Arrow from their text, not one by one (its careful path
    # would fail here), and come out as Spark's.
    exact = ['{"a":1.5}', '{"a":null}', "{}", '{"a":1e2}', '{"a":-0}', '{"a":12345678.99}', '{"a":-1.5E-1}',
             '{"a":0.10,"i":3}', '{"a":7}']
    monkeypatch.setattr(typed, "_decimals", None)
    rows = parser.parse(pa.array([t.encode() for t in exact], pa.binary())).to_pylist()
    spark_rows = _spark_rows(spark, DDL, exact)
    assert all(not bad and _same(ours, theirs) for ours, (bad, theirs) in zip(rows, spark_rows, strict=True))
