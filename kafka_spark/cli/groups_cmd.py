"""`kafka-spark groups list|describe|lag`: consumer groups, their members and how far behind they are."""

from __future__ import annotations

import argparse
import json

from kafka_spark.cli.metadata_cmd import add_client_args, client_from_args
from kafka_spark.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("groups", help="list consumer groups, describe one, or show its lag")
    p.add_argument("action", choices=["list", "describe", "lag"])
    p.add_argument("group", nargs="?", help="the group id (describe, lag); or --group")
    p.add_argument("--group", dest="group_option", metavar="GROUP", help="the group id, as Kafka's tools take it")
    add_client_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    args.group = args.group_option or args.group
    if args.action != "list" and not args.group:
        raise ConfigError(f"groups {args.action} needs a group id")
    with client_from_args(args) as client:
        if args.action == "list":
            groups = client.groups.list_groups()
            if args.json:
                print(json.dumps([{"group_id": g.group_id, "protocol_type": g.protocol_type, "state": g.state,
                                   "type": g.group_type} for g in groups]))
            else:
                for g in groups:
                    print(f"{g.group_id}  {g.state or '-'}  {g.protocol_type or '-'}")
            return 0
        lag = client.groups.lag(args.group)
        if args.action == "lag":
            if args.json:
                print(json.dumps({
                    "group": args.group, "total_lag": sum(v.lag or 0 for v in lag.values()),
                    "partitions": [{"topic": tp.topic, "partition": tp.partition, "committed": v.committed,
                                    "end": v.end, "lag": v.lag} for tp, v in lag.items()],
                }))
            else:
                _print_lag(lag)
            return 0
        desc = client.groups.describe(args.group)
        if args.json:
            print(json.dumps({
                "group_id": desc.group_id, "state": desc.state, "protocol_type": desc.protocol_type,
                "protocol": desc.protocol,
                "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                             "group_instance_id": m.group_instance_id,
                             "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in m.assignment]}
                            for m in desc.members],
                "offsets": [{"topic": tp.topic, "partition": tp.partition, "committed": v.committed, "end": v.end,
                             "lag": v.lag} for tp, v in lag.items()],
            }))
            return 0
        print(f"group {desc.group_id}  state {desc.state}  protocol {desc.protocol_type or '-'}/{desc.protocol or '-'}")
        for m in desc.members:
            parts = ", ".join(str(tp) for tp in m.assignment) or "-"
            print(f"  member {m.member_id}  client {m.client_id}  host {m.client_host}  partitions {parts}")
        _print_lag(lag)
        return 0


def _print_lag(lag: dict) -> None:
    print(f"{'TOPIC':<30} {'PARTITION':>9} {'COMMITTED':>12} {'END':>12} {'LAG':>10}")
    for tp, v in lag.items():
        print(f"{tp.topic:<30} {tp.partition:>9} {v.committed:>12} {v.end:>12} {v.lag:>10}")
    print(f"total lag {sum(v.lag or 0 for v in lag.values())}")
