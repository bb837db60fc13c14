"""`kafka-spark zk brokers|topics|groups|offsets|lag`: a ZooKeeper-mode cluster as ZooKeeper sees it (read-only)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kafka_spark.app.flags import add_topic_options, topics_of
from kafka_spark.cli.metadata_cmd import add_client_args, client_from_args, client_props
from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError
from kafka_spark.zookeeper.brokers import BrokerRegistration, registered_brokers
from kafka_spark.zookeeper.errors import ZooKeeperDataError
from kafka_spark.zookeeper.offsets import group_offsets, groups
from kafka_spark.zookeeper.session import ZooKeeperSession
from kafka_spark.zookeeper.settings import ZooKeeperSettings
from kafka_spark.zookeeper.topics import topic_names, topic_partitions

ACTIONS = ("brokers", "topics", "groups", "offsets", "lag")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zk", help="read a ZooKeeper-mode cluster's brokers, topics and old consumer groups "
                                  "from ZooKeeper (read-only)")
    p.add_argument("action", choices=ACTIONS, help="brokers; topics; groups (under /consumers); offsets or "
                                                   "lag of one group (lag asks the brokers for their ends)")
    p.add_argument("group", nargs="?", help="the old consumer group (offsets, lag); or --group")
    p.add_argument("--group", dest="group_option", metavar="GROUP", help="the old consumer group")
    add_topic_options(p, what="only this topic", pattern=False)
    add_client_args(p)
    p.set_defaults(run=run)


def _settings(args: argparse.Namespace) -> ZooKeeperSettings:
    settings = ZooKeeperSettings.from_properties(client_props(args))
    if settings is None:
        raise ConfigError("give --zookeeper host:port[,host:port...][/chroot] (or zookeeper.connect with -X)")
    return settings


def run(args: argparse.Namespace) -> int:
    args.group = args.group_option or args.group
    args.topic = topics_of(args)
    if args.action in ("offsets", "lag") and not args.group:
        raise ConfigError(f"zk {args.action} needs a group")
    settings = _settings(args)
    with ZooKeeperSession(settings) as session:
        if args.action == "brokers":
            return _brokers(session, args)
        if args.action == "topics":
            return _topics(session, args)
        if args.action == "groups":
            return _emit(args, {"groups": groups(session)}, lambda d: "\n".join(d["groups"]))
        offsets = group_offsets(session, args.group, args.topic or None)
    if args.action == "offsets":
        rows: list[dict[str, Any]] = [
            {"topic": tp.topic, "partition": tp.partition, "offset": off} for tp, off in sorted(offsets.items())
        ]
        return _emit(args, {"group": args.group, "offsets": rows}, lambda d: _table(
            ("TOPIC", "PARTITION", "OFFSET"), [(r["topic"], r["partition"], r["offset"]) for r in d["offsets"]]))
    with client_from_args(args) as client:
        ends = client.latest_offsets(sorted(offsets)) if offsets else {}
    rows = [{"topic": tp.topic, "partition": tp.partition, "offset": off, "end": ends.get(tp),
             "lag": None if tp not in ends else max(ends[tp] - off, 0)} for tp, off in sorted(offsets.items())]
    total = sum(r["lag"] or 0 for r in rows)
    return _emit(args, {"group": args.group, "total_lag": total, "partitions": rows}, lambda d: _table(
        ("TOPIC", "PARTITION", "OFFSET", "END", "LAG"),
        [(r["topic"], r["partition"], r["offset"], _dash(r["end"]), _dash(r["lag"])) for r in d["partitions"]])
        + f"\ntotal lag {d['total_lag']}")


def _brokers(session: ZooKeeperSession, args: argparse.Namespace) -> int:
    protocol = ClientConfig(client_props(args)).security_protocol
    data = {"brokers": [{
        "id": b.node_id, "rack": b.rack, "version": b.version,
        "endpoints": [{"listener": e.listener, "protocol": e.protocol, "host": e.host, "port": e.port}
                      for e in b.endpoints],
        "client_address": _chosen(b, protocol, session.settings.listener),
    } for b in registered_brokers(session).values()]}
    return _emit(args, data, lambda d: _table(
        ("ID", "CLIENT ADDRESS", "LISTENERS", "RACK"),
        [(b["id"], b["client_address"] or "-",
          " ".join(f"{e['listener']}({e['protocol']})={e['host']}:{e['port']}" for e in b["endpoints"]),
          b["rack"] or "-") for b in d["brokers"]]))


def _chosen(broker: BrokerRegistration, protocol: str, listener: str | None) -> str | None:
    try:
        return broker.endpoint(protocol, listener).address
    except ZooKeeperDataError:
        return None


def _topics(session: ZooKeeperSession, args: argparse.Namespace) -> int:
    names = args.topic or topic_names(session)
    out = []
    for name in names:
        parts = topic_partitions(session, name)
        if parts is None:
            raise ConfigError(f"topic {name!r} is not registered in ZooKeeper {session.ensemble}")
        out.append({"name": name, "partitions": [
            {"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
             "replicas": list(p.replicas), "isr": list(p.isr)} for p in parts]})
    return _emit(args, {"topics": out}, lambda d: _table(
        ("TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR"),
        [(t["name"], p["partition"], p["leader"], p["leader_epoch"], ",".join(map(str, p["replicas"])),
          ",".join(map(str, p["isr"]))) for t in d["topics"] for p in t["partitions"]]))


def _emit(args: argparse.Namespace, data: dict[str, Any], text: Any) -> int:
    print(json.dumps(data, indent=2) if args.json else text(data))
    return 0


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    cells = [tuple(map(str, header)), *(tuple(map(str, r)) for r in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)
