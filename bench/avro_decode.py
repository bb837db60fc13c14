"""Avro payload decoder benchmark: kafka_spark.formats.avro.codec against fastavro alone.

One ~10-field record (long, string, decimal(12,2) as bytes, timestamp-millis, date, array<string>,
map<string>, enum, a nested record with a nullable field, a nullable double), payloads without framing.

- `fastavro`: `schemaless_reader` of each payload into dicts (logical types applied by fastavro), no Arrow;
  what Confluent's AvroDeserializer does per record.
- `decode`: our decoder, each payload into the Python values of its Arrow type.
- `decode + pa.array`: decode, then build the Arrow column, the whole work of a decoded column.
- `fastavro + pa.array`: fastavro's dicts built into the same column (what a hand-written reader would do).

    .venv/bin/python bench/avro_decode.py            # 100,000 records
    .venv/bin/python bench/avro_decode.py --quick    # 10,000 records

Prints records/s on one core for each (the best of five rounds) and its ratio to fastavro alone.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import io
import json
import time
from collections.abc import Callable

import fastavro
import pyarrow as pa

from kafka_spark.formats.avro.codec import avro_decoder
from kafka_spark.formats.encoding import InlineSource
from kafka_spark.formats.model import RegisteredSchema

SCHEMA = {
    "type": "record", "name": "Order", "namespace": "bench", "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string"}, {"name": "city", "type": "string"},
            {"name": "zip", "type": ["null", "string"]}]}},
        {"name": "score", "type": ["null", "double"]},
    ]}




def payloads(n: int) -> list[bytes]:
    parsed = fastavro.parse_schema(SCHEMA)
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    out = []
    for i in range(n):
        value = {
            "id": 1_000_000_000 + i, "name": f"customer-{i % 997}", "amount": decimal.Decimal(i) / 4,
            "ts": start + datetime.timedelta(seconds=i), "day": (start + datetime.timedelta(days=i % 400)).date(),
            "tags": ["a", "b", "c"][: 1 + i % 3], "attrs": {"k": "v", "channel": "web"},
            "status": ("NEW", "PAID", "SHIPPED")[i % 3],
            "address": {"street": f"{i % 100} Main St", "city": "Springfield", "zip": None if i % 5 else "12345"},
            "score": None if i % 7 == 0 else i * 0.5,
        }
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, value)
        out.append(buffer.getvalue())
    return out


def best_times(cases: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """The best time of each case over `rounds` rounds, the cases taking turns so that load from elsewhere
    on the machine falls on all of them alike."""
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(rounds):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10,000 records instead of 100,000")
    n = 10_000 if parser.parse_args().quick else 100_000
    data = payloads(n)
    schema = RegisteredSchema(json.dumps(SCHEMA), id=1, subject="bench-value", version=1)
    decoder = avro_decoder(schema, InlineSource(schema))
    parsed = fastavro.parse_schema(SCHEMA)
    reader, buffer = fastavro.schemaless_reader, io.BytesIO
    arrow_type = decoder.arrow_type

    def fastavro_alone() -> list[object]:
        return [reader(buffer(p), parsed) for p in data]

    def ours() -> list[object]:
        decode = decoder.decode
        return [decode(1, (), p) for p in data]

    cases: dict[str, Callable[[], object]] = {
        "fastavro (dicts, logical types applied)": fastavro_alone,
        "decode": ours,
        "decode + pa.array": lambda: pa.array(ours(), type=arrow_type),
        "fastavro + pa.array": lambda: pa.array(fastavro_alone(), type=arrow_type),
    }
    print(f"{n:,} records of {sum(map(len, data)) / n:.0f} bytes, one core")
    best = best_times(cases, rounds=5)
    peer = best["fastavro (dicts, logical types applied)"]
    for name, seconds in best.items():
        print(f"  {name:42s} {n / seconds:>12,.0f} records/s  {peer / seconds:5.2f}x fastavro")


if __name__ == "__main__":
    main()
