"""`kafka-spark consume`: read an offset range of a topic and print it, or write JSON lines.

With --value-format / --key-format, keys and values in Confluent's wire format decode with their subject's
schema from the registry (as a `pykafka` read decodes them) and print as JSON (decoded_json.py says how
each type reads). A record that does not decode prints an error line naming its offset and the reason,
then ends the command with status 1, or with --skip-message-on-error is skipped and counted.

Printed lines hold one record each: control characters in keys, values and headers print as escapes
(`\\n`, `\\x04`, `\\u2028`); --json --base64 gives the exact bytes.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from datetime import datetime, timezone
from typing import Any

from kafka_spark.app.flags import (
    add_data_loss_option,
    add_format_options,
    add_hidden,
    add_isolation_option,
    add_one_topic_option,
    add_partition_option,
    partitions_of,
)
from kafka_spark.app.values import parse_bool, parse_time
from kafka_spark.cli.consume_decoding import Decoding, decoding_from_args
from kafka_spark.cli.metadata_cmd import add_client_args, client_from_args
from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.errors import ConfigError

EXIT_BAD_RECORD = 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("consume", help="read a range of offsets and print the records (or JSON lines)",
                       description="Read a range of offsets and print one line per record: control characters in "
                                   "keys, values and headers print as escapes (\\n, \\x04, \\u2028); --json "
                                   "--base64 gives the exact bytes.")
    add_client_args(p)
    add_one_topic_option(p)
    add_partition_option(p)
    p.add_argument("--offset", dest="start", default="earliest", metavar="WHERE",
                   help="where to start: earliest (default), latest, an offset, or @TIME (epoch ms or ISO-8601)")
    add_hidden(p, "--from", dest="start")
    p.add_argument("--end-offset", dest="end", default="latest", metavar="WHERE",
                   help="where to stop (exclusive): latest (default), an offset, or @TIME")
    add_hidden(p, "--to", dest="end")
    p.add_argument("--max-messages", dest="max", type=int, metavar="N",
                   help="stop after this many records per partition")
    add_hidden(p, "--max", dest="max", type=int)
    add_isolation_option(p)
    add_data_loss_option(p)
    p.add_argument("--base64", action="store_true", help="JSON: keys and values as base64 instead of UTF-8 text")
    add_format_options(p, "printed as JSON: structs and maps as objects, decimals as exact numbers, dates, times "
                          "and timestamps as ISO-8601 text (timestamps in UTC, with Z), bytes as base64")
    p.add_argument("--skip-message-on-error", action="store_true",
                   help="with a format: print an error line for a record that does not decode and go on (default: "
                        "stop there, exit status 1)")
    p.set_defaults(run=run)


def _resolve(client: KafkaClient, tps: list[TopicPartition], spec: str, isolation: str | None,
             what: str) -> dict[TopicPartition, int]:
    spec = spec.strip()
    if spec == "earliest":
        return client.earliest_offsets(tps)
    if spec == "latest":
        return client.latest_offsets(tps, isolation)
    if spec.startswith("@"):
        found = client.offsets_for_times(dict.fromkeys(tps, parse_time(spec[1:], f"--{what}")), isolation)
        ends = client.latest_offsets(tps, isolation)
        return {tp: ends[tp] if found[tp] is None else found[tp] for tp in tps}
    try:
        offset = int(spec)
    except ValueError:
        raise ConfigError(f"--{what}: expected earliest, latest, an offset or @TIME, got {spec!r}") from None
    return dict.fromkeys(tps, offset)


def _text(data: bytes | None, b64: bool) -> str | None:
    if data is None:
        return None
    return base64.b64encode(data).decode() if b64 else data.decode("utf-8", "replace")


# Characters that would end or garble a printed line: C0/C1 controls, DEL and Unicode's line separators.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _line_safe(text: str | None) -> str | None:
    """TEXT with its control characters as Python-style escapes, so a record prints on one line."""
    if text is None:
        return None
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


def run(args: argparse.Namespace) -> int:
    extra = {"isolation.level": args.isolation_level} if args.isolation_level else {}
    decoding = decoding_from_args(args)
    with client_from_args(args, extra) as client:
        wanted = partitions_of(args)
        tps = [tp for tp in client.partitions(args.topic) if wanted is None or tp.partition in wanted]
        if not tps:
            raise ConfigError(f"{args.topic} has no partition {sorted(wanted or [])}")
        fail_on_data_loss = parse_bool(args.fail_on_data_loss or "true", "--fail-on-data-loss")
        starts = _resolve(client, tps, args.start, args.isolation_level, "offset")
        ends = _resolve(client, tps, args.end, args.isolation_level, "end-offset")
        if decoding is not None:
            decoding.plan(args.topic)
        total = skipped = 0
        for tp in tps:
            start, end = starts[tp], ends[tp]
            if args.max is not None:
                end = min(end, start + args.max)
            if end <= start:
                continue
            reader = client.fetch(tp.topic, tp.partition, start, end, include_headers=True,
                                  fail_on_data_loss=fail_on_data_loss)
            shown = bad = 0
            for batch in reader:
                rows = batch.to_pylist() if decoding is None else decoding.rows(batch)
                for row in rows:
                    if args.max is not None and shown >= args.max:
                        break
                    shown += 1
                    if decoding is not None and decoding.failed(row):
                        sys.stdout.flush()  # the records before it come first in a shared log
                        print(f"kafka-spark consume: error: {decoding.failure(row)}", file=sys.stderr, flush=True)
                        if not args.skip_message_on_error:
                            return EXIT_BAD_RECORD
                        bad += 1
                        continue
                    _print(row, args, decoding)
            total += shown - bad
            skipped += bad
            if reader.stats.lost_offsets and not args.json:
                print(f"# {tp}: skipped {reader.stats.lost_offsets} offsets deleted by retention")
    if not args.json:
        print(f"# {total} records" + (f", {skipped} skipped (they do not decode)" if skipped else ""))
    return 0


def _print(row: dict[str, Any], args: argparse.Namespace, decoding: Decoding | None) -> None:
    # The decoded sides as JSON text (exact decimals), in place of their bytes.
    decoded = {side: decoding.json(row, side) for side in decoding.sides} if decoding is not None else {}
    ts = row["timestamp"]
    if args.json:
        fields: dict[str, Any] = {
            "topic": row["topic"], "partition": row["partition"], "offset": row["offset"],
            "timestamp": int(ts.timestamp() * 1000) if ts is not None else None,
            "timestampType": row["timestampType"],
            **{side: None if side in decoded else _text(row[side], args.base64) for side in ("key", "value")},
            "headers": [{"key": h["key"], "value": _text(h["value"], args.base64)} for h in row.get("headers") or []],
        }
        print("{" + ", ".join(f"{json.dumps(k)}: {decoded.get(k) or json.dumps(v)}" for k, v in fields.items()) + "}")
        return
    when = ts.astimezone(timezone.utc).isoformat(timespec="milliseconds") if isinstance(ts, datetime) else "-"
    key = decoded.get("key") or _line_safe(_text(row["key"], False))
    value = decoded.get("value") or _line_safe(_text(row["value"], False))
    headers = " ".join(f"{_line_safe(h['key'])}={_line_safe(_text(h['value'], False))}"
                       for h in row.get("headers") or [])
    print(f"{row['partition']}:{row['offset']}  {when}  key={key}  value={value}"
          + (f"  headers: {headers}" if headers else ""))
