"""`kafka-spark stream`: the stream of jobs/stream_to_delta.py, on a local Spark session (or the one running)."""

from __future__ import annotations

import argparse

from kafka_spark.app import stream
from kafka_spark.app.arguments import add_stream_arguments
from kafka_spark.app.exits import run_reported

PROG = "kafka-spark stream"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stream", help="stream Kafka topics into a Delta or Iceberg table, each micro-batch's "
                                      "offsets in its commit", description=stream.DESCRIPTION, epilog=stream.EPILOG)
    add_stream_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_reported(PROG, lambda: stream.run_stream(stream.config_from_args(args), args.json, PROG))
