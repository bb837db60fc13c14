"""`kafka-spark metadata`: brokers, topics, partitions, leaders; plus the connection options of every client command."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kafka_spark.app.flags import add_connection_options, add_topic_options, client_props, has_cluster, topics_of
from kafka_spark.client import KafkaClient
from kafka_spark.client.cluster import BOOTSTRAP_WINDOW
from kafka_spark.errors import ERROR_CODES, ConfigError

__all__ = ["add_client_args", "client_from_args", "client_props", "has_cluster"]

# Someone at a terminal is told sooner than a job (30 s) that no bootstrap broker takes a connection: after the
# time one connection attempt may take (socket.connection.setup.timeout.ms), so that a host that never answers
# is still reported as timed out. `-X socket.connection.setup.timeout.max.ms=...` waits longer for starting brokers.
CLI_BOOTSTRAP_WINDOW_MS = 10000


def add_client_args(p: argparse.ArgumentParser) -> None:
    """The connection options of every command that talks to a cluster (defined once, in app/flags.py)."""
    add_connection_options(p)


def client_from_args(args: argparse.Namespace, extra: dict[str, Any] | None = None) -> KafkaClient:
    """A client from --command-config, -X, --bootstrap-server and --zookeeper (later ones win)."""
    props = client_props(args)
    if not has_cluster(props):
        raise ConfigError("give --bootstrap-server or --zookeeper (or bootstrap.servers in --command-config)")
    props.update(extra or {})
    props.setdefault(BOOTSTRAP_WINDOW, CLI_BOOTSTRAP_WINDOW_MS)
    return KafkaClient(props)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metadata", help="show brokers, topics, partitions, leaders and replicas")
    add_client_args(p)
    add_topic_options(p, what="only this topic")
    p.add_argument("--internal", action="store_true", help="include internal topics (__consumer_offsets, ...)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with client_from_args(args) as client:
        wanted = topics_of(args)
        md = client.metadata(wanted or None)
        names = sorted(wanted) if wanted else md.matching(args.pattern or ".*", args.internal)
        topics = [md.topics[n] for n in names if n in md.topics]
        if args.json:
            print(json.dumps({
                "cluster_id": md.cluster_id, "controller_id": md.controller_id,
                "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                            for b in sorted(md.brokers.values(), key=lambda b: b.node_id)],
                "topics": [{
                    "name": t.name, "topic_id": str(t.topic_id), "internal": t.is_internal, "error_code": t.error_code,
                    "partitions": [{"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
                                    "replicas": list(p.replicas), "isr": list(p.isr),
                                    "offline": list(p.offline_replicas), "error_code": p.error_code}
                                   for p in sorted(t.partitions.values(), key=lambda p: p.partition)],
                } for t in topics],
            }, indent=2))
            return 0
        print(f"cluster {md.cluster_id}  controller {md.controller_id}")
        for b in sorted(md.brokers.values(), key=lambda b: b.node_id):
            print(f"  broker {b.node_id}  {b.address}" + (f"  rack {b.rack}" if b.rack else ""))
        for t in topics:
            if t.error_code:
                name = ERROR_CODES[t.error_code].name if t.error_code in ERROR_CODES else t.error_code
                print(f"topic {t.name}: {name}")
                continue
            print(f"topic {t.name}  id {t.topic_id}  {len(t.partitions)} partitions")
            for p in sorted(t.partitions.values(), key=lambda p: p.partition):
                print(f"  partition {p.partition:<4} leader {p.leader:<4} epoch {p.leader_epoch:<4} "
                      f"replicas {','.join(map(str, p.replicas)):<10} isr {','.join(map(str, p.isr))}")
        return 1 if any(t.error_code for t in topics) else 0
