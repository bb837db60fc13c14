"""Avro payload decoder benchmark: kafka_spark.formats.avro.codec against fastavro alone.

One ~10-field record (long, string, decimal(12,2) as bytes, timestamp-millis, date, array<string>,
map<string>, enum, a nested record with a nullable field, a nullable double), payloads without framing.

- `fastavro`: `schemaless_reader` of each payload into dicts (logical types applied by fastavro), no Arrow;
  what Confluent's AvroDeserializer does per record.
- `decode`: our decoder, each payload into the Python values of its Arrow type.
- `decode + pa.array`: decode, then build the Arrow column, the whole work of a decoded column.
- `fastavro + pa.array`: fastavro's dicts built into the same column (what a hand-written reader would do).
- `decode_batch, per record`: a task's whole decode of Arrow batches of Confluent-framed values (framing, decode,
  the column) with the block path off (KAFKA_SPARK_AVRO_BLOCK=0): today's fastavro path.
- `decode_batch, block`: the same with the block path (group by schema id, walk the datums, one in-memory Avro
  container, DataFusion's reader, resolution in Arrow).
- `raw: value column as bytes`: the floor of any decode, the framed values taken out of the Arrow batch.

    .venv/bin/python bench/avro_decode.py            # 100,000 records
    .venv/bin/python bench/avro_decode.py --quick    # 10,000 records
    .venv/bin/python bench/avro_decode.py --schema wide   # a wide record of 50 fields (longs, strings,
                                                          # doubles, optional strings, timestamps, flags)

Prints records/s for each (the best of five rounds) on the wall clock and per CPU second (DataFusion may use
more than one thread: per CPU second is the per-core rate), and the ratios to fastavro alone and to the
per-record decode_batch.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import io
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

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




# A wide record of 50 fields as event tables carry them: an id, counters, measures, labels, optional labels, times
# and flags.
WIDE = {"type": "record", "name": "Wide", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    *({"name": f"count_{i}", "type": "long"} for i in range(19)),
    *({"name": f"label_{i}", "type": "string"} for i in range(10)),
    *({"name": f"measure_{i}", "type": "double"} for i in range(10)),
    *({"name": f"note_{i}", "type": ["null", "string"]} for i in range(5)),
    *({"name": f"at_{i}", "type": {"type": "long", "logicalType": "timestamp-micros"}} for i in range(3)),
    *({"name": f"flag_{i}", "type": "boolean"} for i in range(2)),
]}
SCHEMAS = {"order": SCHEMA, "wide": WIDE}


def _wide(i: int, start: datetime.datetime) -> dict[str, object]:
    value: dict[str, object] = {"id": 1_000_000_000 + i}
    value.update({f"count_{k}": i * (k + 1) for k in range(19)})
    value.update({f"label_{k}": f"label-{k}-{i % (50 + k)}" for k in range(10)})
    value.update({f"measure_{k}": i * 0.25 + k for k in range(10)})
    value.update({f"note_{k}": None if (i + k) % 3 else f"note {i % 101}" for k in range(5)})
    value.update({f"at_{k}": start + datetime.timedelta(seconds=i, microseconds=k) for k in range(3)})
    value.update({f"flag_{k}": (i + k) % 2 == 0 for k in range(2)})
    return value


def payloads(n: int, schema: dict = SCHEMA) -> list[bytes]:
    """`n` records of `schema` (SCHEMA or WIDE), record i with id 1,000,000,000 + i, bare Avro."""
    parsed = fastavro.parse_schema(schema)
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    out = []
    for i in range(n):
        if schema is WIDE:
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, parsed, _wide(i, start))
            out.append(buffer.getvalue())
            continue
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


def best_times(cases: dict[str, Callable[[], object]], rounds: int) -> dict[str, tuple[float, float]]:
    """The best (wall, CPU) seconds of each case over `rounds` rounds, the cases taking turns so that load from
    elsewhere on the machine falls on all of them alike."""
    best = dict.fromkeys(cases, (float("inf"), float("inf")))
    for _ in range(rounds):
        for name, fn in cases.items():
            start, cpu = time.perf_counter(), time.process_time()
            fn()
            took = (time.perf_counter() - start, time.process_time() - cpu)
            best[name] = (min(best[name][0], took[0]), min(best[name][1], took[1]))
    return best


def print_rates(best: dict[str, tuple[float, float]], n: int, per_record: str) -> None:
    """Each case's records/s on the wall clock and per CPU second, and its ratios to fastavro alone and to the
    case named `per_record` (the per-record path)."""
    peer = best["fastavro (dicts, logical types applied)"][1]
    base = best[per_record][1]
    print(f"  {'':42s} {'records/s':>12s} {'per CPU s':>12s} {'x fastavro':>10s} {'x per record':>12s}")
    for name, (wall, cpu) in best.items():
        print(f"  {name:42s} {n / wall:>12,.0f} {n / cpu:>12,.0f} {peer / cpu:10.2f} {base / cpu:12.2f}")


def batch_cases(data: list[bytes], chunk: int, schema: dict = SCHEMA) -> dict[str, Callable[[], object]]:
    """decode_batch over Arrow batches of the framed values, with the block path and without; the raw floor."""
    root = Path(__file__).resolve().parent.parent
    sys.path[:0] = [str(root), str(root / "tests")]  # bench.avro_bench's registration, the test registry
    import pyarrow.compute as pc
    from harness.schema_registry import RegistryServer

    from kafka_spark.formats.avro.columnar import SWITCH, block_path_on
    from kafka_spark.formats.columns import decode_batch
    from kafka_spark.formats.options import payload_options
    from kafka_spark.formats.plan import plan_payloads
    from kafka_spark.formats.registry.wire import frame

    server = RegistryServer().__enter__()  # lives as long as the process: the plan's decoders look ids up
    from bench.avro_bench import register

    schema_id = register(server.url, "bench-value", schema)
    framed = [frame(schema_id, p) for p in data]
    batches = [pa.RecordBatch.from_arrays([pa.array(framed[at:at + chunk], pa.binary())], names=["value"])
               for at in range(0, len(framed), chunk)]
    options = payload_options({"valueFormat": "avro", "schema.registry.url": server.url})
    assert options is not None
    plan = plan_payloads(options, ("bench",))
    want = sum(range(1_000_000_000, 1_000_000_000 + len(data)))

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
        cases["decode_batch, block"] = run("1")
    else:
        print("  (DataFusion is not installed: no block path; pip install '.[registry]')")
    cases["raw: value column as bytes"] = lambda: [b.column("value").to_pylist() for b in batches]
    return cases


def bench_args(doc: str | None, chunk: int) -> tuple[argparse.Namespace, int]:
    """The one-process benches' command line (--quick, --records, --chunk, --schema) and the record count."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10,000 records instead of 100,000")
    parser.add_argument("--records", type=int, help="records (default 100,000; quick 10,000)")
    parser.add_argument("--chunk", type=int, default=chunk, help=f"records per Arrow batch (default {chunk:,})")
    parser.add_argument("--schema", choices=sorted(SCHEMAS), default="order",
                        help="the 10-field order (default) or a wide record of 50 fields")
    args = parser.parse_args()
    return args, args.records or (10_000 if args.quick else 100_000)


def main() -> None:
    args, n = bench_args(__doc__, 50_000)
    chunk = args.chunk
    chosen = SCHEMAS[args.schema]
    data = payloads(n, chosen)
    schema = RegisteredSchema(json.dumps(chosen), id=1, subject="bench-value", version=1)
    decoder = avro_decoder(schema, InlineSource(schema))
    parsed = fastavro.parse_schema(chosen)
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
        **batch_cases(data, chunk, chosen),
    }
    print(f"{n:,} records of {sum(map(len, data)) / n:.0f} bytes, Arrow batches of {chunk:,}, one process")
    print_rates(best_times(cases, rounds=5), n, "decode_batch, per record")


if __name__ == "__main__":
    main()
