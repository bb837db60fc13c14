"""`kafka-spark offsets`: earliest, latest or by-time offsets; ``--json`` prints Spark's offsets JSON."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone

from kafka_spark.cli.metadata_cmd import add_client_args, client_from_args
from kafka_spark.client import EARLIEST, LATEST, KafkaClient, TopicPartition
from kafka_spark.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("offsets", help="earliest, latest or by-time offsets of topic partitions")
    add_client_args(p)
    p.add_argument("--topic", action="append", default=[], help="a topic (repeatable)")
    p.add_argument("--pattern", help="topics in which this regular expression is found (as subscribePattern)")
    p.add_argument("--partitions", help="comma-separated partition numbers (default: all)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--earliest", action="store_true", help="the first available offsets")
    which.add_argument("--latest", action="store_true", help="the end offsets (the default)")
    which.add_argument("--time", help="the first offset at or after a time: epoch milliseconds or ISO-8601")
    p.add_argument("--isolation-level", choices=["read_uncommitted", "read_committed"],
                   help="read_committed: latest is the last stable offset")
    p.set_defaults(run=run)


def parse_time(text: str) -> int:
    """Epoch milliseconds from digits or an ISO-8601 date/time (UTC unless it names a zone)."""
    if text.strip().lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--time: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def selected_partitions(client: KafkaClient, topics: list[str], pattern: str | None,
                        partitions: str | None) -> list[TopicPartition]:
    """The partitions named by --topic/--pattern/--partitions."""
    names = list(topics)
    if pattern:
        names += client.topics(pattern)
    if not names:
        raise ConfigError("give --topic or --pattern")
    wanted = None
    if partitions:
        try:
            wanted = {int(x) for x in partitions.split(",") if x.strip()}
        except ValueError:
            raise ConfigError(f"--partitions: {partitions!r} is not a list of numbers") from None
    out = []
    for name in dict.fromkeys(names):
        out += [tp for tp in client.partitions(name) if wanted is None or tp.partition in wanted]
    return out


def run(args: argparse.Namespace) -> int:
    with client_from_args(args) as client:
        tps = selected_partitions(client, args.topic, args.pattern, args.partitions)
        if args.time is not None:
            ts = parse_time(args.time)
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
