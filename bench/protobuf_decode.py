"""Protobuf payload decoder benchmark: kafka_spark.formats.protobuf against protobuf's own MessageToDict, and a
task's whole decode per record against the column-wise path.

One ~10-field message (scalars, an enum, a nested message, a repeated field, a map and a Timestamp). On payloads
without framing: ours parses each payload and converts it into the Python values of its Arrow type, then builds
the Arrow column; the peer parses and calls `json_format.MessageToDict` (what a hand-written UDF usually does),
without building Arrow; ptars alone parses them into Arrow (the column-wise path's parser, its ceiling).
Then `decode_batch` (framing, decode, the column) over Arrow batches of Confluent-framed values against the test
registry: per record (KAFKA_SPARK_PROTOBUF_BLOCK=0: upb and values.py) and column-wise (protobuf/columnar.py:
ptars, the written-back comparison, the conversion in Arrow).

    .venv/bin/python bench/protobuf_decode.py            # 200,000 records
    .venv/bin/python bench/protobuf_decode.py --quick    # 20,000 records

Prints records/s on the wall clock and per CPU second (the per-core rate), the best of the rounds, and each row's
ratio to the per-record decode_batch.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

# one timing loop for the decode benches (the three run the same rounds)
from avro_decode import best_times
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


def batch_cases(data: list[bytes], chunk: int) -> dict[str, Callable[[], object]]:
    """decode_batch over Arrow batches of the framed values, per record and column-wise."""
    root = Path(__file__).resolve().parent.parent
    sys.path[:0] = [str(root), str(root / "tests")]  # the test registry
    import pyarrow.compute as pc
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from harness.schema_registry import RegistryServer

    from kafka_spark.formats.columns import decode_batch
    from kafka_spark.formats.options import payload_options
    from kafka_spark.formats.plan import plan_payloads
    from kafka_spark.formats.protobuf.columnar import SWITCH, block_path_on
    from kafka_spark.formats.registry.wire import frame

    server = RegistryServer().__enter__()  # lives as long as the process: the plan's decoders look ids up
    schema_id = SchemaRegistryClient({"url": server.url}).register_schema("bench-value", Schema(PROTO, "PROTOBUF"))
    framed = [frame(schema_id, p, (1,)) for p in data]
    batches = [pa.RecordBatch.from_arrays([pa.array(framed[at:at + chunk], pa.binary())], names=["value"])
               for at in range(0, len(framed), chunk)]
    options = payload_options({"valueFormat": "protobuf", "valueMessageName": "bench.Order",
                               "schema.registry.url": server.url})
    assert options is not None
    plan = plan_payloads(options, ("bench",))
    want = sum(range(1_000_000, 1_000_000 + len(data)))

    def run(switch: str) -> Callable[[], object]:
        def decode() -> object:
            os.environ[SWITCH] = switch
            decoded = [decode_batch(b, plan) for b in batches]
            os.environ.pop(SWITCH, None)
            return decoded
        got = sum(pc.sum(d.column("value").field("id")).as_py() for d in decode())
        if got != want:
            raise SystemExit(f"decode_batch with {SWITCH}={switch} summed ids {got}, expected {want}")
        return decode

    cases = {"decode_batch, per record": run("0")}
    if block_path_on():
        cases["decode_batch, column-wise"] = run("1")
    else:
        print("  (ptars is not installed: no column-wise path; pip install '.[registry]')")
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 records, two rounds")
    parser.add_argument("--chunk", type=int, default=50_000, help="records per Arrow batch (default 50,000)")
    args = parser.parse_args()
    n, rounds = (20_000, 2) if args.quick else (200_000, 3)
    schema, source, data = payloads(n)
    decoder = protobuf_decoder(schema, source, None, "bench.Order")
    indexes = (1,)
    size = sum(map(len, data)) / n
    cls = message_factory.GetMessageClass(decoder.descriptor)

    def ours_values() -> object:
        decode = decoder.decode
        return [decode(1, indexes, p) for p in data]

    cases: dict[str, Callable[[], object]] = {
        "parse only (FromString)": lambda: [cls.FromString(p) for p in data],
        "kafka_spark decode -> Python values": ours_values,
        "kafka_spark decode -> Arrow column": lambda: pa.array(ours_values(), type=decoder.arrow_type),
        "FromString + MessageToDict": lambda: [json_format.MessageToDict(cls.FromString(p),
                                                                         preserving_proto_field_name=True)
                                               for p in data],
    }
    try:
        import ptars

        handler = ptars.HandlerPool([decoder.descriptor.file]).get_for_message(decoder.descriptor)
        bare = pa.array(data, pa.binary())
        cases["ptars alone: payloads -> Arrow"] = lambda: handler.array_to_record_batch(bare)
    except ImportError:
        pass
    cases.update(batch_cases(data, min(args.chunk, n)))
    print(f"{n:,} payloads of {size:.0f} bytes on average, Arrow batches of {min(args.chunk, n):,}; best of {rounds}")
    best = best_times(cases, rounds)
    per_record = best["decode_batch, per record"][1]
    print("| what | records/s | per CPU s | x per-record decode_batch |")
    print("| --- | ---: | ---: | ---: |")
    for name, (wall, cpu) in best.items():
        print(f"| {name} | {n / wall:,.0f} | {n / cpu:,.0f} | {per_record / cpu:.2f} |")


if __name__ == "__main__":
    main()
