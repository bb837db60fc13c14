"""Entry point: one sub-command per module, each adding its own parser."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kafka_spark.cli import (
    consume_cmd,
    delta_offsets_cmd,
    dump_log_cmd,
    groups_cmd,
    iceberg_offsets_cmd,
    load_cmd,
    local_cmd,
    metadata_cmd,
    offsets_cmd,
    optimize_cmd,
    produce_cmd,
    stream_cmd,
    zk_cmd,
)
from kafka_spark.errors import ConfigError, KafkaSparkError

COMMANDS = (
    local_cmd, metadata_cmd, offsets_cmd, groups_cmd, produce_cmd, consume_cmd, delta_offsets_cmd, iceberg_offsets_cmd,
    dump_log_cmd,
    zk_cmd, load_cmd, stream_cmd, optimize_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-spark", description="Kafka ingestion for Spark, in pure Python.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except KafkaSparkError as exc:
        print(f"kafka-spark: error: {exc}", file=sys.stderr)
        # As the jobs: 2 for settings (and argparse's usage errors), 1 for what the cluster or the data did.
        return 2 if isinstance(exc, ConfigError) else 1


if __name__ == "__main__":
    sys.exit(main())
