"""`kafka-spark offsets`: earliest, latest or by-time offsets; ``--json`` prints Spark's offsets JSON."""

from __future__ import annotations

import argparse
import json

from kafka_spark.app.flags import (
    add_isolation_option,
    add_partition_option,
    add_topic_options,
    partitions_of,
    topics_of,
)
from kafka_spark.app.values import parse_time
from kafka_spark.cli.metadata_cmd import add_client_args, client_from_args
from kafka_spark.client import EARLIEST, LATEST, KafkaClient, TopicPartition
from kafka_spark.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("offsets", help="earliest, latest or by-time offsets of topic partitions")
    add_client_args(p)
    add_topic_options(p)
    add_partition_option(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--earliest", action="store_true", help="the first available offsets")
    which.add_argument("--latest", action="store_true", help="the end offsets (the default)")
    which.add_argument("--time", help="the first offset at or after a time: epoch milliseconds or ISO-8601")
    add_isolation_option(p)
    p.set_defaults(run=run)


def selected_partitions(client: KafkaClient, topics: list[str], pattern: str | None,
                        wanted: set[int] | None) -> list[TopicPartition]:
    """The partitions named by --topic/--pattern/--partition."""
    names = list(topics)
    if pattern:
        names += client.topics(pattern)
    if not names:
        raise ConfigError("give --topic or --pattern")
    out = []
    for name in dict.fromkeys(names):
        out += [tp for tp in client.partitions(name) if wanted is None or tp.partition in wanted]
    return out


def run(args: argparse.Namespace) -> int:
    with client_from_args(args) as client:
        tps = selected_partitions(client, topics_of(args), args.pattern, partitions_of(args))
        if args.time is not None:
            ts = parse_time(args.time, "--time")
            found = client.offsets_for_times(dict.fromkeys(tps, ts), args.isolation_level)
            offsets = {tp: (-1 if o is None else o) for tp, o in found.items()}
        else:
            spec = EARLIEST if args.earliest else LATEST
            offsets = {tp: r.offset for tp, r in client.list_offsets(dict.fromkeys(tps, spec),
                                                                     args.isolation_level).items()}
    if args.json:
        # Spark's offsets JSON: {"topic": {"0": 42}}; -1 where no record is at or after --time
        spark: dict[str, dict[str, int]] = {}
        for tp in sorted(offsets):
            spark.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
        print(json.dumps(spark))
        return 0
    for tp in sorted(offsets):
        offset = offsets[tp]
        print(f"{tp.topic}:{tp.partition}:{offset if offset >= 0 else 'none'}")
    return 0
