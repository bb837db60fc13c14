"""The runs and the report of bench/registry_bench.py: its contenders per format, the warm-up, their summary, the
analysis and the Markdown (the checked runs, the summary, the table's rows and the files are avro_report's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.avro_report import (
    PARTITIONS,
    Contender,
    Runs,
    Sample,
    check,
    decode_cost,
    log,
    mrate,
    table_rows,
    write_files,
)
from bench.avro_report import summarize as summarize_runs

REF = "spark"  # the reference of every row: Spark's own function on format("kafka")


def contenders(fmt: str) -> list[Contender]:
    """The contenders of `fmt` (protobuf or json-schema), in the report's order."""
    if fmt == "protobuf":
        return [
            Contender("pykafka", "noop", 'format("pykafka") valueFormat=protobuf → noop'),
            Contender(REF, "noop", 'format("kafka") + from_protobuf(substring(value, 8), binaryDescriptorSet) → noop',
                      ref=True),
            Contender("raw", "ceiling", 'format("pykafka") without decoding → noop'),
            Contender("decode-record", "ceiling", "decode_batch per record (KAFKA_SPARK_PROTOBUF_BLOCK=0: upb), "
                      "one process"),
            Contender("decode-column", "ceiling", "decode_batch column-wise (ptars), one process"),
            Contender("decoded-rows", "ceiling", "the decoded rows, made beforehand, from a Python source → noop"),
        ]
    return [
        Contender("pykafka", "noop", 'format("pykafka") valueFormat=json-schema (validate=true, the default) → noop'),
        Contender("pykafka-novalidate", "noop", 'format("pykafka") valueFormat=json-schema, validate=false → noop'),
        Contender(REF, "noop", 'format("kafka") + from_json(cast(substring(value, 6) as string), DDL) → noop',
                  ref=True),
        Contender("raw", "ceiling", 'format("pykafka") without decoding → noop'),
        Contender("decode-record-validate", "ceiling", "decode_batch per record, validate=true, one process",
                  default=False),
        Contender("decode-record", "ceiling", "decode_batch per record, validate=false "
                  "(KAFKA_SPARK_JSON_SCHEMA_BLOCK=0: json.loads), one process"),
        Contender("decode-column", "ceiling", "decode_batch column-wise, validate=false (msgspec), one process"),
        Contender("decoded-rows", "ceiling", "the decoded rows, made beforehand, from a Python source → noop"),
    ]


IN_PROCESS = ("decode-record", "decode-record-validate", "decode-column")


def warm_up(runner: Runs, warm: Any, names: list[str], rounds: int, skipped: dict[str, str]) -> list[str]:
    """Unrecorded, checked rounds of every contender; one that fails is left out, its error kept in `skipped`."""
    for _ in range(rounds):
        for name in list(names):
            try:
                check(runner, name, warm, runner.run(name, warm))
            except Exception as e:  # reported; the others go on
                reason = " ".join(str(e).split())[:300]
                log(f"  {name} failed, left out: {reason}")
                skipped[name] = reason
                names.remove(name)
    return names


def summarize(samples: dict[str, list[Sample]], cores: int) -> dict[str, Any]:
    """avro_report's summary: the one-process rows on one core, every row against REF, no CPU split."""
    return summarize_runs(samples, cores, IN_PROCESS, lambda _: REF, cpu=False)


def analysis(result: dict[str, Any]) -> list[str]:
    """Where the time goes: the in-process decode paths, the decode ceiling on every core against our read, the
    undecoded floor plus the decode, the rows' hand-over to Spark, and Spark's function."""
    fmt, results, records = result["meta"]["format"], result["results"], result["data"]["records"]
    cores = result["meta"]["cores"]
    json_schema = fmt == "json-schema"
    ours = results.get("pykafka-novalidate" if json_schema else "pykafka")
    ours_name = "validate=false" if json_schema else "valueFormat=protobuf"
    raw, ref, rows = results.get("raw"), results.get(REF), results.get("decoded-rows")
    per_record, column = results.get("decode-record"), results.get("decode-column")
    ceiling = column or per_record
    lines = []
    if per_record and column:
        lines.append(f"- The decode alone, per core: column-wise {mrate(column['records_per_s'])} records/s against "
                     f"{mrate(per_record['records_per_s'])} per record, "
                     f"**{column['records_per_s'] / per_record['records_per_s']:.1f}×**.")
    if ours and ceiling:
        top = ceiling["records_per_s"] * cores
        lines.append(f"- Decode ceiling on {cores} cores (the column-wise decode in one process × {cores}): "
                     f"{mrate(top)} records/s. Our read ({ours_name}) → noop: "
                     f"{mrate(ours['records_per_s'])} records/s, {ours['records_per_s'] / top:.0%} of it.")
    if ours and raw and ceiling:
        lines.append(decode_cost(ours, raw, ceiling, records, cores))
    if ours and rows:
        floor = f"{rows['median_s'] / ours['median_s']:.0%} of our decoded read"
        if ceiling:
            floor += (f"; rows + decode at the ceiling's rate = "
                      f"{rows['median_s'] + records / (ceiling['records_per_s'] * cores):.2f} s")
        lines.append(f"- Handing Spark the decoded rows (made beforehand, a Python source that only yields them) "
                     f"takes {rows['median_s']:.2f} s: the bridge's floor for this record, {floor}.")
    if ours and ref:
        lines.append(f"- Spark's own function reads and decodes {mrate(ref['records_per_s_per_core'])} records/s per "
                     f"core; ours {mrate(ours['records_per_s_per_core'])}: **{ours['ratio_vs_ref']:.2f}×**.")
    if json_schema:
        checked = results.get("pykafka")
        if checked and ours:
            lines.append(f"- Validation (`validate=true`, the default): {checked['median_s']:.2f} s against "
                         f"{ours['median_s']:.2f} s without ({checked['median_s'] / ours['median_s']:.1f}× the "
                         "time): jsonschema validates per record, and a validated read takes no column-wise path. "
                         "`from_json` validates nothing, so `validate=false` is the read comparable to it.")
        validated = results.get("decode-record-validate")
        if validated and checked:
            top = validated["records_per_s"] * cores
            lines.append(f"- Validated per-record decode alone: {mrate(validated['records_per_s'])} records/s "
                         f"per core; × {cores} = {mrate(top)}, and the validated read reaches "
                         f"{checked['records_per_s'] / top:.0%} of it.")
    return lines


def markdown(result: dict[str, Any]) -> str:
    meta, data, results = result["meta"], result["data"], result["results"]
    cores, fmt = meta["cores"], meta["format"]
    what = ("Protobuf (Confluent framing: magic byte, 4-byte id, message indexes [1] as two bytes)" if fmt == "protobuf"
            else "JSON (Confluent framing: magic byte, 4-byte id)")
    lines = [f"# {fmt} through a schema registry ({meta['when']}, {meta['machine']})", "",
             f"Command: `{meta['command']}`  ",
             f"{data['records']:,} records, {data['value_bytes'] / data['records']:.0f} bytes a value ({what}), "
             f"{PARTITIONS} partitions, {data['log_bytes'] / 1e6:.0f} MB in the log; {meta['runs']} runs each, "
             f"interleaved; Spark local[{cores}]; load average {meta.get('load_start', '?')} at the start, "
             f"{meta.get('load_end', '?')} at the end; {meta['seconds']:.0f} s in all.", "",
             "| group | contender | median s | min–max s | records/s | records/s per core | × Spark's function | "
             "worker RSS MB |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += table_rows(contenders(fmt), results)
    for name, reason in result.get("skipped", {}).items():
        lines.append(f"| — | `{name}`: not run ({reason}) | | | | | | |")
    lines += ["", f"records/s per core: records/s ÷ {cores} for the Spark rows (local[{cores}]), ÷ 1 for the "
              "one-process rows (timed in CPU seconds). × Spark's function: the row's records/s per core ÷ the "
              "reference's; above 1 is faster.", "", "Where the time goes:", "", *analysis(result)]
    return "\n".join(lines) + "\n"


def write(out: Path, fmt: str, stamp: str, result: dict[str, Any]) -> Path:
    return write_files(out, f"registry-{fmt}", stamp, markdown(result), result)
