"""Avro encoder benchmark: the column-wise encoder (kafka_spark.formats.avro.column_encode) against the per-record
path and fastavro alone, one process, no Spark.

The records of bench/avro_decode.py (the 10-field order, or `--schema wide`: 50 fields), decoded once into the Arrow
column the project's decoder gives (what a query hands `to_avro`, or the Kafka sink its value column), in Arrow
batches of `--chunk` rows (Spark's Arrow batches hold 10,000):

- `fastavro`: `schemaless_writer` of each record's Python dict (logical types as fastavro takes them), no Arrow;
  what Confluent's AvroSerializer does per record.
- `to_avro, per record`: `ColumnEncoding.values` with KAFKA_SPARK_AVRO_BLOCK_WRITE=0: `to_pylist`, our converters
  and fastavro per value, the binary column built.
- `to_avro, column-wise`: the same with the column-wise encoder.
- `encode_column`: the column-wise encoder alone (no per-record rows to fill in).

    .venv/bin/python bench/avro_encode.py                 # 100,000 records of the order
    .venv/bin/python bench/avro_encode.py --quick         # 10,000
    .venv/bin/python bench/avro_encode.py --schema wide   # the 50-field record

Prints records/s (the best of five rounds) on the wall clock and per CPU second, and the ratios to fastavro alone
and to the per-record path. The outputs are checked equal (and equal to the payloads fastavro wrote) first.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import fastavro
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.avro_decode import SCHEMAS, bench_args, best_times, payloads, print_rates
from kafka_spark.formats.avro.codec import AvroEncoder, avro_decoder
from kafka_spark.formats.avro.column_encode import SWITCH, encode_column
from kafka_spark.formats.encoding import InlineSource
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.spark.function_tasks import ColumnEncoding


def main() -> None:
    args, n = bench_args(__doc__, 10_000)
    chosen = SCHEMAS[args.schema]
    data = payloads(n, chosen)
    schema = RegisteredSchema(json.dumps(chosen))
    source = InlineSource(schema)
    decoder = avro_decoder(schema, source)
    column = pa.array([decoder.decode(0, (), p) for p in data], decoder.arrow_type)
    batches = [column.slice(at, args.chunk) for at in range(0, n, args.chunk)]
    parsed = fastavro.parse_schema(chosen)
    dicts = [fastavro.schemaless_reader(io.BytesIO(p), parsed) for p in data]
    encoding = ColumnEncoding("to_avro", "avro", inline=schema, source=source)
    encoder = AvroEncoder(schema, source)
    writer_schema, named = encoder.parsed_writer()

    def fastavro_alone() -> list[bytes]:
        out = []
        write, buffer = fastavro.schemaless_writer, io.BytesIO
        for value in dicts:
            sink = buffer()
            write(sink, parsed, value)
            out.append(sink.getvalue())
        return out

    def to_avro(switch: str) -> Callable[[], list[pa.Array]]:
        def run() -> list[pa.Array]:
            os.environ[SWITCH] = switch
            try:
                return [encoding.values(b) for b in batches]
            finally:
                os.environ.pop(SWITCH, None)
        return run

    def column_wise_alone() -> list[object]:
        return [encode_column(b, writer_schema, named) for b in batches]

    cases: dict[str, Callable[[], object]] = {
        "fastavro (dicts, logical types applied)": fastavro_alone,
        "to_avro, per record": to_avro("0"),
        "to_avro, column-wise": to_avro("1"),
        "encode_column": column_wise_alone,
    }
    # the same bytes from every path, and the bytes fastavro wrote the payloads with
    per_record = [v for a in to_avro("0")() for v in a.to_pylist()]
    column_wise = [v for a in to_avro("1")() for v in a.to_pylist()]
    if not (per_record == column_wise == fastavro_alone() == data):
        raise SystemExit("the encoders' outputs differ")
    alone = column_wise_alone()
    if any(r is None or len(r[1]) for r in alone):
        raise SystemExit("the column-wise encoder left rows to the per-record path")
    print(f"{n:,} records of {sum(map(len, data)) / n:.0f} bytes ({args.schema}), Arrow batches of {args.chunk:,}, "
          "one process; outputs checked equal")
    print_rates(best_times(cases, rounds=5), n, "to_avro, per record")


if __name__ == "__main__":
    main()
