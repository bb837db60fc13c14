"""The Protobuf codec against Spark's own `from_protobuf` (spark-protobuf): for a schema holding every Protobuf
type, well-known type and option, the Spark type `from_protobuf` gives is the Spark form of our Arrow type, and
the rows it decodes equal ours.

Payloads are written by protobuf's own message classes, without framing. spark-protobuf is not among the jars
the local harness fetches: the test uses the jar named by KAFKA_SPARK_SPARK_PROTOBUF_JAR, or the one in the local
Maven repository for the installed PySpark, and is skipped when there is neither.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from unit.formats.codec_support import compile_protos, message_class

from kafka_spark.formats.encoding import InlineSource
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.protobuf.codec import protobuf_decoder
from kafka_spark.formats.protobuf.schema import message_indexes
from kafka_spark.formats.spark_ddl import arrow_to_spark_ddl
from kafka_spark.local.jars import pyspark_version

PROTO = """
syntax = "proto3";
package parity;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/any.proto";
import "google/protobuf/empty.proto";

message Point { int32 x = 1; int32 y = 2; }
message Person { string name = 1; Person bff = 2; }

message Everything {
  enum Color { RED = 0; GREEN = 1; BLUE = 2; }
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3; uint32 u32 = 4; fixed32 f32 = 5;
  int64 i64 = 6; sint64 s64 = 7; sfixed64 sf64 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool b = 13; string s = 14; bytes raw = 15; Color color = 16;
  repeated Color colors = 17; repeated int64 longs = 18; repeated Point points = 19;
  map<string, int32> counts = 20; map<int64, Point> by_id = 21; map<bool, Color> flags = 22;
  Point where = 23; google.protobuf.Timestamp at = 24; google.protobuf.Duration took = 25;
  repeated google.protobuf.Timestamp ats = 26;
  google.protobuf.Int32Value w_i32 = 27; google.protobuf.UInt32Value w_u32 = 28;
  google.protobuf.Int64Value w_i64 = 29; google.protobuf.UInt64Value w_u64 = 30;
  google.protobuf.StringValue w_s = 31; google.protobuf.BytesValue w_b = 32; google.protobuf.BoolValue w_bool = 33;
  google.protobuf.FloatValue w_f = 34; google.protobuf.DoubleValue w_d = 35;
  google.protobuf.Any any = 36; google.protobuf.Empty empty = 37;
  oneof choice { string text = 38; Point point = 39; }
  optional int32 opt = 40;
  Person person = 41;
}
"""

OPTION_SETS: list[dict[str, str]] = [
    {"recursive.fields.max.depth": "2"},
    {"recursive.fields.max.depth": "3", "emit.default.values": "true", "enums.as.ints": "true",
     "upcast.unsigned.ints": "true", "unwrap.primitive.wrapper.types": "true", "convert.any.fields.to.json": "true",
     "retain.empty.message.types": "true"},
]


def _jar() -> Path | None:
    named = os.environ.get("KAFKA_SPARK_SPARK_PROTOBUF_JAR")
    if named:
        return Path(named)
    version = pyspark_version()
    local = (Path.home() / ".m2" / "repository" / "org" / "apache" / "spark" / "spark-protobuf_2.13" / version
             / f"spark-protobuf_2.13-{version}.jar")
    return local if local.exists() else None


def _has_class(spark: Any, name: str) -> bool:
    jvm = spark._jvm
    try:
        jvm.java.lang.Class.forName(name, False, jvm.Thread.currentThread().getContextClassLoader())
    except Exception:  # a py4j error naming ClassNotFoundException
        return False
    return True


@pytest.fixture(scope="module")
def spark_protobuf(spark):
    """The session with spark-protobuf's `from_protobuf` registered."""
    expression = "org.apache.spark.sql.protobuf.ProtobufDataToCatalyst"
    if not _has_class(spark, expression):
        jar = _jar()
        if jar is None:
            pytest.skip("spark-protobuf is not on the class path: set KAFKA_SPARK_SPARK_PROTOBUF_JAR to the jar of "
                        "org.apache.spark:spark-protobuf_2.13 for the installed PySpark")
        # ADD JAR puts the jar on this thread's context class loader, the one py4j resolves classes with
        spark.sql(f"ADD JAR '{jar}'")
        assert _has_class(spark, expression), f"{jar} holds no {expression}"
    # A session started without the jar never ran its extension, which registers the function.
    spark._jvm.org.apache.spark.sql.protobuf.InternalFunctionRegistration.apply()
    return spark


def _messages() -> tuple[list[Any], Any]:
    pool = compile_protos({"parity/everything.proto": PROTO})
    cls = message_class(pool, "parity.Everything")
    full = cls(i32=-1, s32=-2, sf32=-3, u32=2**32 - 1, f32=2**31, i64=-(2**62), s64=5, sf64=-6, u64=2**64 - 1,
               f64=2**63 + 1, fl=1.5, db=-2.25, b=True, s="héllo", raw=b"\x00\xff", color=2, colors=[0, 2, 9],
               longs=[0, -1], text="chosen", opt=0)
    full.points.add(x=1)
    full.counts["a"] = 0
    full.by_id[-(2**40)].y = 3
    full.flags[False] = 1
    full.where.SetInParent()
    full.at.seconds, full.at.nanos = -86_400, 999_999
    full.took.seconds, full.took.nanos = -3, -500_000_001
    full.ats.add(seconds=1, nanos=5_000)
    full.w_i32.value = 0
    full.w_u32.value = 2**32 - 2
    full.w_i64.value = -7
    full.w_u64.value = 2**63
    full.w_s.value = "w"
    full.w_b.SetInParent()
    full.w_bool.value = True
    full.w_f.value = 0.5
    full.w_d.value = -0.0
    point = message_class(pool, "parity.Point")(x=4, y=5)
    full.any.type_url, full.any.value = "type.googleapis.com/parity.Point", point.SerializeToString()
    full.empty.SetInParent()
    full.person.name = "a"
    full.person.bff.name = "b"
    full.person.bff.bff.name = "c"
    full.person.bff.bff.bff.name = "d"
    other = cls(point={"x": 7}, fl=-0.0, colors=[], b=False)
    other.any.SetInParent()
    return [full, other, cls()], pool


def _normal(value: Any) -> Any:
    """Maps as sorted (key, value) lists: Spark keeps a map's wire order, protobuf's Python maps do not."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_normal(v) for v in value]
        if items and all(isinstance(v, tuple) and len(v) == 2 for v in items):
            return sorted(items, key=repr)
        return items
    return value


def _nullable_everywhere(json_text: str) -> str:
    return re.sub(r'"(nullable|containsNull|valueContainsNull)":false', r'"\1":true', json_text)




@pytest.mark.parametrize("options", OPTION_SETS, ids=["defaults", "every-option"])
def test_from_protobuf_types_and_values_match_ours(spark_protobuf, options) -> None:
    from pyspark.sql.functions import col
    from pyspark.sql.protobuf.functions import from_protobuf
    from pyspark.sql.types import _parse_datatype_string

    messages, pool = _messages()
    descriptor_set = _descriptor_set(pool)
    schema = RegisteredSchema(PROTO, "PROTOBUF", id=1)
    decoder = protobuf_decoder(schema, InlineSource(schema), options, "parity.Everything")
    indexes = message_indexes(messages[0].DESCRIPTOR)
    payloads = [m.SerializeToString() for m in messages]
    ours = pa.array([decoder.decode(1, indexes, p) for p in payloads], type=decoder.arrow_type)

    df = spark_protobuf.createDataFrame([(i, p) for i, p in enumerate(payloads)], "n INT, payload BINARY")
    decoded = df.orderBy("n").select(
        from_protobuf(col("payload"), "parity.Everything", options=options, binaryDescriptorSet=descriptor_set)
        .alias("v"))
    spark_type = decoded.schema["v"].dataType
    declared = _parse_datatype_string(arrow_to_spark_ddl(decoder.arrow_type))
    assert _nullable_everywhere(declared.json()) == _nullable_everywhere(spark_type.json())

    theirs = decoded.select(col("v").cast(declared).alias("v")).toArrow().column("v").combine_chunks()
    assert _normal(theirs.to_pylist()) == _normal(ours.to_pylist())


def _descriptor_set(pool: Any) -> bytes:
    from google.protobuf import descriptor_pb2

    files = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(file: Any) -> None:
        if file.name in seen:
            return
        seen.add(file.name)
        for dep in file.dependencies:
            add(dep)
        files.file.add().ParseFromString(file.serialized_pb)

    add(pool.FindFileByName("parity/everything.proto"))
    return files.SerializeToString()
