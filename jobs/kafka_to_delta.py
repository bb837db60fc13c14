"""Load Kafka topics into a Delta table, committing the Kafka offsets in the same Delta transaction as the rows.

    ./spark-submit.sh jobs/kafka_to_delta.py          # demo: local broker, sample page views, data/page_views
    ./spark-submit.sh jobs/kafka_to_delta.py --bootstrap-servers host:9092 --topics orders --table /lake/orders
    ./spark-submit.sh jobs/kafka_to_delta.py --config conf/kafka-to-delta.toml --max-records 1000000

Each run loads what is new since the offsets the table has committed (at most --max-records) in one Delta
commit, so a run that fails or is killed is simply run again. Flags override the --config file. With no
broker given, the job starts (or reuses) the local broker of `kafka-spark local start` and seeds it with
a sample page-view stream if that topic is empty.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from job_common import (
    COMMON_KEYS,
    SAMPLE_TABLE,
    SAMPLE_TOPIC,
    STOP_HINT,
    JobConfig,
    LazySpark,
    Notes,
    Source,
    add_common_arguments,
    offset_lines,
    parse_config,
    parse_positive,
    print_embedded,
    resolve_source,
    run_main,
    sink_settings,
    table_location,
    validate,
)

from kafka_spark.delta import LoadOptions, LoadResult, OffsetsMovedBackwardsError, committed_position, load

PROG = "kafka-to-delta"


@dataclass
class LoadConfig(JobConfig):
    """A batch load's settings: the common ones and a cap on the offsets one run loads."""

    max_records: int | None = None


FILE_KEYS = {**COMMON_KEYS, "max-records": ("max_records", parse_positive)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Load Kafka topics into a Delta table; the Kafka offsets are committed in the same Delta "
                    "transaction as the rows, so every run resumes exactly where the last commit ended.",
        epilog="With no broker (no --bootstrap-servers, none in --config) the job starts or reuses the local "
               f"broker, seeds topic {SAMPLE_TOPIC!r} with sample page views if it is empty, and loads it into "
               f"{SAMPLE_TABLE.relative_to(SAMPLE_TABLE.parents[1])}/. Stop that broker with: {STOP_HINT}")
    add_common_arguments(p, "kafka-to-delta.toml")
    p.add_argument("--max-records", metavar="N", help="load at most N offsets in this run (default: all new ones)")
    p.add_argument("--json", action="store_true",
                   help="print only the run's summary, as one line of JSON (no progress display)")
    return p


def read_config(argv: Sequence[str] | None) -> tuple[LoadConfig, argparse.Namespace]:
    config, args = parse_config(build_parser(), argv, LoadConfig(), FILE_KEYS)
    assert isinstance(config, LoadConfig)
    return config, args


# ---- output --------------------------------------------------------------------------------------------


def print_summary(config: LoadConfig, source: Source, table: str, result: LoadResult) -> None:
    if result.status == "up-to-date":
        print(f"{PROG}: {table} is up to date (sink {result.sink_id!r}, batch {result.batch}); "
              f"no new records, nothing written ({result.seconds:.1f}s)")
    else:
        print(f"{PROG}: committed batch {result.batch} of sink {result.sink_id!r} to {table} "
              f"(Delta version {result.table_version})")
        print(f"  rows       {result.rows:,} in {result.seconds:.1f}s ({result.records_per_second:,.0f} records/s)")
        if result.dead_letters:
            print(f"  dead       {result.dead_letters:,} records whose value does not parse, to {config.dead_letter}")
    print("  offsets    next offset to load, per topic partition" + (" (from -> to)" if result.rows else ""))
    for line in offset_lines(PROG, result.start, result.offsets):
        print(line)
    if result.lost:
        lost = ", ".join(f"{tp}: {n:,}" for tp, n in sorted(result.lost.items()))
        print(f"  warning    offsets deleted by retention before they were loaded, skipped: {lost}")
    if config.publish_group and result.status == "committed":
        print(f"  group      offsets also committed to consumer group {config.publish_group!r}")
    if config.publish_zookeeper_group and result.status == "committed":
        print(f"  zookeeper  offsets also written to /consumers/{config.publish_zookeeper_group}/offsets")
    if source.embedded:
        print_embedded(source, table)


# ---- main ----------------------------------------------------------------------------------------------


def run(config: LoadConfig, as_json: bool) -> int:
    note = Notes(PROG, quiet=as_json)
    validate(config)
    started = time.monotonic()
    spark = LazySpark(PROG)
    table = table_location(config.table or str(SAMPLE_TABLE))
    source = resolve_source(config, table, note, spark,
                            lambda: committed_position(table, config.sink_id, spark) is not None)
    options = LoadOptions(**sink_settings(config, source, table), max_records=config.max_records,
                          progress=not as_json)
    try:
        result = load(spark, options)
    except OffsetsMovedBackwardsError as exc:
        if source.embedded:
            raise OffsetsMovedBackwardsError(f"{exc} (demo: delete {table} to start over)") from None
        raise
    if as_json:
        print(json.dumps({**result.summary(), "table": table, "bootstrap": source.bootstrap,
                          "embedded": source.embedded, "seeded": source.seeded,
                          "elapsed_seconds": round(time.monotonic() - started, 3)}))
    else:
        print_summary(config, source, table, result)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(PROG, read_config, run, argv)


if __name__ == "__main__":
    sys.exit(main())
