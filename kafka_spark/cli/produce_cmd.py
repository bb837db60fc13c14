"""`kafka-spark produce`: send lines from stdin or a file as records (optionally ``key<SEP>value``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kafka_spark.app.flags import add_one_topic_option
from kafka_spark.cli.metadata_cmd import add_client_args, client_from_args
from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    from kafka_spark.client.producer.delivery import RecordFuture


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("produce", help="send records from stdin or a file, one per line")
    add_client_args(p)
    add_one_topic_option(p)
    p.add_argument("--file", help="read lines from this file instead of stdin")
    p.add_argument("--key-separator", help="split each line into key and value at the first separator")
    p.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                   help="a header added to every record (repeatable)")
    p.add_argument("--partition", type=int, help="send every record to this partition")
    p.add_argument("--acks", choices=["all", "-1", "0", "1"], help="acknowledgements to wait for (default all)")
    p.add_argument("--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    p.add_argument("--linger-ms", type=int)
    p.set_defaults(run=run)


def _lines(path: str | None) -> Iterator[bytes]:
    stream = open(path, "rb") if path else sys.stdin.buffer  # noqa: SIM115 (closed below)
    try:
        for raw in stream:
            yield raw.rstrip(b"\n").rstrip(b"\r")
    finally:
        if path:
            stream.close()


def run(args: argparse.Namespace) -> int:
    headers: list[tuple[str, bytes | None]] = []
    for item in args.header:
        name, sep, text = item.partition("=")
        if not sep:
            raise ConfigError(f"--header expects KEY=VALUE, got {item!r}")
        headers.append((name, text.encode()))
    extra: dict[str, Any] = {}
    if args.acks:
        extra["acks"] = args.acks
    if args.compression:
        extra["compression.type"] = args.compression
    if args.linger_ms is not None:
        extra["linger.ms"] = args.linger_ms
    separator = args.key_separator.encode() if args.key_separator else None
    per_partition: Counter[int] = Counter()
    with client_from_args(args, extra) as client, client.producer() as producer:
        futures: list[RecordFuture] = []
        for line in _lines(args.file):
            key: bytes | None = None
            value: bytes = line
            if separator is not None:
                if separator not in line:
                    raise ConfigError(f"line {len(futures) + 1} has no key separator {args.key_separator!r}")
                key, value = line.split(separator, 1)
            futures.append(producer.send(args.topic, value, key=key, headers=headers, partition=args.partition))
        producer.flush()
        for future in futures:
            per_partition[future.get().partition] += 1
    total = sum(per_partition.values())
    if args.json:
        print(json.dumps({"topic": args.topic, "records": total,
                          "partitions": {str(p): n for p, n in sorted(per_partition.items())}}))
    else:
        spread = ", ".join(f"{p}: {n}" for p, n in sorted(per_partition.items()))
        print(f"produced {total} records to {args.topic}" + (f" (partition: records {spread})" if spread else ""))
    return 0
