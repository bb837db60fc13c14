"""JSON Schema payload decoder benchmark: a task's whole decode per record against the column-wise path, beside the
parsers it was chosen from.

One ~10-field order as JSON (the fields of bench/protobuf_decode.py's message: an integer, strings, a number, a
boolean, an enum, a nested object, an array, a map and a date-time string), Confluent-framed, decoded with the
schema registered in the test registry:

- `json.loads` / `msgspec.json.decode` alone: the bare payloads into Python objects, no Arrow;
- `pyarrow.json.read_json`: the payloads joined by newlines, read with the column type as its explicit schema
  (the map left out: Arrow's JSON reader has no map type);
- `decode_batch` (framing, decode, the column) over Arrow batches: per record (KAFKA_SPARK_JSON_SCHEMA_BLOCK=0:
  json.loads and types.py's converters) with validation on (the default) and off, and column-wise
  (json_schema/columnar.py: msgspec typed by the schema, the column built field by field; validation off only).

    .venv/bin/python bench/json_schema_decode.py            # 100,000 records
    .venv/bin/python bench/json_schema_decode.py --quick    # 10,000 records

Prints records/s on the wall clock and per CPU second, the best of the rounds, and each row's ratio to the
per-record decode_batch without validation.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.json as pa_json

# one timing loop for the decode benches (the three run the same rounds)
from avro_decode import best_times

SCHEMA = {"type": "object", "title": "Order", "properties": {
    "id": {"type": "integer"}, "customer": {"type": "string"}, "amount": {"type": "number"},
    "paid": {"type": "boolean"}, "status": {"type": "string", "enum": ["NEW", "SHIPPED"]},
    "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                                                 "zip": {"type": "integer"}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "quantities": {"type": "object", "additionalProperties": {"type": "integer"}},
    "created": {"type": "string", "format": "date-time"}, "version": {"type": "integer"}},
    "required": ["id", "customer"]}


def payloads(n: int) -> list[bytes]:
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    out = []
    for i in range(n):
        value = {
            "id": 1_000_000 + i, "customer": f"customer-{i % 997}", "amount": i * 0.25, "paid": i % 2 == 0,
            "status": ("NEW", "SHIPPED")[i % 2],
            "address": {"street": f"{i % 100} Main St", "city": "Springfield", "zip": 10000 + i % 900},
            "tags": ["a", "b", "c"][: 1 + i % 3], "quantities": {"x": i % 5 + 1, "y": 2},
            "created": (start + datetime.timedelta(seconds=i)).isoformat(), "version": 3,
        }
        out.append(json.dumps(value, separators=(",", ":")).encode())
    return out


def batch_cases(data: list[bytes], chunk: int) -> tuple[dict[str, Callable[[], object]], pa.DataType]:
    """decode_batch over Arrow batches of the framed values, per record (validation on and off) and
    column-wise; and the column type."""
    root = Path(__file__).resolve().parent.parent
    sys.path[:0] = [str(root), str(root / "tests")]  # the test registry
    import pyarrow.compute as pc
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from harness.schema_registry import RegistryServer

    from kafka_spark.formats.columns import decode_batch
    from kafka_spark.formats.json_schema.columnar import SWITCH, block_path_on
    from kafka_spark.formats.options import payload_options
    from kafka_spark.formats.plan import plan_payloads
    from kafka_spark.formats.registry.wire import frame

    server = RegistryServer().__enter__()  # lives as long as the process: the plan's decoders look ids up
    schema_id = SchemaRegistryClient({"url": server.url}).register_schema("bench-value",
                                                                         Schema(json.dumps(SCHEMA), "JSON"))
    framed = [frame(schema_id, p) for p in data]
    batches = [pa.RecordBatch.from_arrays([pa.array(framed[at:at + chunk], pa.binary())], names=["value"])
               for at in range(0, len(framed), chunk)]
    want = sum(range(1_000_000, 1_000_000 + len(data)))
    arrow_type = pa.null()

    def run(switch: str, validate: str) -> Callable[[], object]:
        nonlocal arrow_type
        options = payload_options({"valueFormat": "json-schema", "schema.registry.url": server.url,
                                   "validate": validate})
        assert options is not None
        plan = plan_payloads(options, ("bench",))

        def decode() -> list[pa.RecordBatch]:
            os.environ[SWITCH] = switch
            decoded = [decode_batch(b, plan) for b in batches]
            os.environ.pop(SWITCH, None)
            return decoded
        done = decode()
        arrow_type = done[0].schema.field("value").type
        got = sum(pc.sum(d.column("value").field("id")).as_py() for d in done)
        if got != want:
            raise SystemExit(f"decode_batch with {SWITCH}={switch} summed ids {got}, expected {want}")
        return decode

    cases = {"decode_batch, per record, validate=true": run("0", "true"),
             "decode_batch, per record, validate=false": run("0", "false")}
    if block_path_on():
        cases["decode_batch, column-wise, validate=false"] = run("1", "false")
    return cases, arrow_type


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 records, two rounds")
    parser.add_argument("--chunk", type=int, default=50_000, help="records per Arrow batch (default 50,000)")
    args = parser.parse_args()
    n, rounds = (10_000, 2) if args.quick else (100_000, 3)
    data = payloads(n)
    chunk = min(args.chunk, n)
    batches, arrow_type = batch_cases(data, chunk)
    without_map = pa.schema([f for f in arrow_type if not pa.types.is_map(f.type)])
    joined = pa.py_buffer(b"\n".join(data))
    options = pa_json.ParseOptions(explicit_schema=without_map, unexpected_field_behavior="ignore")
    cases: dict[str, Callable[[], object]] = {
        "json.loads alone": lambda: [json.loads(p) for p in data],
        "msgspec.json.decode alone": lambda: [msgspec.json.decode(p) for p in data],
        "pyarrow.json.read_json, newline-joined (no map)": lambda: pa_json.read_json(joined, parse_options=options),
        **batches,
    }
    print(f"{n:,} payloads of {sum(map(len, data)) / n:.0f} bytes on average, Arrow batches of {chunk:,}; "
          f"best of {rounds}")
    best = best_times(cases, rounds)
    per_record = best["decode_batch, per record, validate=false"][1]
    print("| what | records/s | per CPU s | x per-record decode_batch (validate=false) |")
    print("| --- | ---: | ---: | ---: |")
    for name, (wall, cpu) in best.items():
        print(f"| {name} | {n / wall:,.0f} | {n / cpu:,.0f} | {per_record / cpu:.2f} |")


if __name__ == "__main__":
    main()
