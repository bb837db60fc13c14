"""Protobuf payload decoder benchmark: kafka_spark.formats.protobuf.codec against protobuf's own MessageToDict.

One ~10-field message (scalars, an enum, a nested message, a repeated field, a map and a Timestamp),
payloads without framing. Ours parses each payload and converts it into the Python values of its Arrow
type, then builds the Arrow column; the peer parses and calls `json_format.MessageToDict` (what a
hand-written UDF usually does), without building Arrow.

    .venv/bin/python bench/protobuf_decode.py            # 200,000 records
    .venv/bin/python bench/protobuf_decode.py --quick    # 20,000 records

Prints records/s on one core for each.
"""

from __future__ import annotations

import argparse
import datetime
import time
from collections.abc import Callable

import pyarrow as pa
from google.protobuf import json_format, message_factory

from kafka_spark.formats.encoding import InlineSource
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.protobuf.codec import protobuf_decoder, protobuf_encoder

PROTO = """
syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";

message Address { string street = 1; string city = 2; int32 zip = 3; }

message Order {
  enum Status { UNKNOWN = 0; NEW = 1; SHIPPED = 2; }
  int64 id = 1;
  string customer = 2;
  double amount = 3;
  bool paid = 4;
  Status status = 5;
  Address address = 6;
  repeated string tags = 7;
  map<string, int32> quantities = 8;
  google.protobuf.Timestamp created = 9;
  uint32 version = 10;
}
"""




def payloads(n: int) -> tuple[RegisteredSchema, InlineSource, list[bytes]]:
    schema = RegisteredSchema(PROTO, "PROTOBUF", id=1)
    source = InlineSource(schema)
    encoder = protobuf_encoder(schema, source, "bench.Order")
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    out = []
    for i in range(n):
        value = {
            "id": 1_000_000 + i, "customer": f"customer-{i % 997}", "amount": i * 0.25, "paid": i % 2 == 0,
            "status": ("NEW", "SHIPPED")[i % 2],
            "address": {"street": f"{i % 100} Main St", "city": "Springfield", "zip": 10000 + i % 900},
            "tags": ["a", "b", "c"][: 1 + i % 3], "quantities": [("x", i % 5 + 1), ("y", 2)],
            "created": start + datetime.timedelta(seconds=i), "version": 3,
        }
        out.append(encoder.encode(value)[1])
    return schema, source, out


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 records, one repetition")
    args = parser.parse_args()
    n, repeat = (20_000, 1) if args.quick else (200_000, 3)
    schema, source, data = payloads(n)
    decoder = protobuf_decoder(schema, source, None, "bench.Order")
    indexes = (1,)
    size = sum(map(len, data)) / n

    def ours_values() -> object:
        decode = decoder.decode
        return [decode(1, indexes, p) for p in data]

    def ours_arrow() -> object:
        return pa.array(ours_values(), type=decoder.arrow_type)

    cls = message_factory.GetMessageClass(decoder._descriptor)

    def parse_only() -> object:
        return [cls.FromString(p) for p in data]

    def message_to_dict() -> object:
        return [json_format.MessageToDict(cls.FromString(p), preserving_proto_field_name=True) for p in data]

    print(f"{n:,} payloads of {size:.0f} bytes on average; best of {repeat}")
    print("| what | records/s |")
    print("| --- | ---: |")
    for name, fn in (("parse only (FromString)", parse_only), ("kafka_spark decode -> Python values", ours_values),
                     ("kafka_spark decode -> Arrow column", ours_arrow),
                     ("FromString + MessageToDict", message_to_dict)):
        seconds = timed(fn, repeat)
        print(f"| {name} | {n / seconds:,.0f} |")


if __name__ == "__main__":
    main()
