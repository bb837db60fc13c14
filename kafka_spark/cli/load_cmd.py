"""`kafka-spark load`: the batch load of jobs/kafka_to_delta.py, on a local Spark session (or the one running)."""

from __future__ import annotations

import argparse

from kafka_spark.app import load
from kafka_spark.app.arguments import add_load_arguments
from kafka_spark.app.exits import run_reported

PROG = "kafka-spark load"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load", help="load what is new in Kafka topics into a Delta or Iceberg table, offsets in "
                                    "the commit",
                       description=load.DESCRIPTION, epilog=load.EPILOG)
    add_load_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_reported(PROG, lambda: load.run_load(load.config_from_args(args), args.json, PROG))
