"""Helpers of the ZooKeeper tests: producing numbered records, latest offsets, ZooKeeper's own shell."""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness.zookeeper import zookeeper_shell

from kafka_spark.client import KafkaClient, Producer
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.zookeeper.offsets import offset_path


def produce(bootstrap: str, topic: str, count: int, start: int = 0, partitions: int = 3) -> None:
    """`count` records numbered from `start`, spread over the partitions in turn."""
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        futures = [producer.send(topic, f"v{n}".encode(), key=f"k{n}".encode(), partition=n % partitions)
                   for n in range(start, start + count)]
        producer.flush()
        for future in futures:
            future.get()


def latest(bootstrap: str, topic: str) -> dict[TopicPartition, int]:
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        return client.latest_offsets(client.partitions(topic))


def shell_write_offsets(connect: str, group: str, offsets: Mapping[TopicPartition, int],
                        auth: str | None = None, acl: bool = False) -> None:
    """The old consumers' layout written by ZooKeeper's own shell (`acl`: only `auth`'s user may touch it)."""
    commands = [f"addauth digest {auth}"] if auth else []
    made: set[str] = set()
    for tp in sorted(offsets):
        path = offset_path(group, tp.topic, tp.partition)
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            parent = "/" + "/".join(parts[:i])
            if parent not in made:
                commands.append(f"create {parent} ''")
                if acl and i >= 2:
                    commands.append(f"setAcl {parent} auth:{auth}:cdrwa")
                made.add(parent)
        commands.append(f"create {path} {offsets[tp]}")
        if acl:
            commands.append(f"setAcl {path} auth:{auth}:cdrwa")
    zookeeper_shell(connect, *commands)


def shell_get(connect: str, paths: list[str], auth: str | None = None) -> dict[str, str]:
    """Each znode's data as ZooKeeper's shell prints it (`get`), one line per path."""
    marks = [f"get {p}" for p in paths]
    out = zookeeper_shell(connect, *([f"addauth digest {auth}"] if auth else []), *marks)
    # The shell echoes nothing for piped commands: the data lines follow in order, between its banners.
    lines = [ln for ln in out.splitlines() if ln and not re.match(
        r"^(Connecting to|Welcome to|JLine|WATCHER::|WatchedEvent)", ln)]
    assert len(lines) == len(paths), out
    return dict(zip(paths, lines, strict=True))
