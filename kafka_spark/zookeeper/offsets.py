"""The old consumers' offset store: `/consumers/<group>/offsets/<topic>/<partition>` holding decimal text.

The value is the next offset to read, as the ZooKeeper-based high-level consumer wrote it (and as a
Kafka group's committed offset means), ASCII digits with no newline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafka_spark.protocol.topic_partition import TopicPartition
from kafka_spark.zookeeper.errors import ZooKeeperConfigError, ZooKeeperDataError
from kafka_spark.zookeeper.session import ZooKeeperSession

CONSUMERS_PATH = "/consumers"


def _name(what: str, name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ZooKeeperConfigError(f"ZooKeeper offsets: {what} {name!r} cannot be a znode name")
    return name


def offset_path(group: str, topic: str, partition: int) -> str:
    """Where an old consumer kept `group`'s position in one partition."""
    return f"{CONSUMERS_PATH}/{_name('group', group)}/offsets/{_name('topic', topic)}/{partition}"


def encode_offset(offset: int) -> bytes:
    """The old consumers' format: the decimal digits of the offset."""
    if offset < 0:
        raise ValueError(f"an offset to store is >= 0, got {offset}")
    return str(offset).encode("ascii")


def decode_offset(path: str, data: bytes) -> int:
    """The offset a znode holds (surrounding whitespace, which shells leave, is allowed)."""
    text = data.decode("ascii", errors="replace").strip()
    if not text.lstrip("-").isdigit():
        raise ZooKeeperDataError(f"{path} holds {text[:40]!r}, not an offset")
    return int(text)


def group_offsets(session: ZooKeeperSession, group: str, topics: Iterable[str] | None = None
                  ) -> dict[TopicPartition, int]:
    """The group's stored offsets (of `topics`, else of every topic it has); negative ones are left out."""
    base = f"{CONSUMERS_PATH}/{_name('group', group)}/offsets"
    names = sorted(set(topics)) if topics is not None else session.children(base) or []
    out: dict[TopicPartition, int] = {}
    for topic in names:
        for child in session.children(f"{base}/{topic}") or []:
            if not child.isdigit():
                continue
            path = offset_path(group, topic, int(child))
            data = session.get(path)
            if data is None:
                continue
            offset = decode_offset(path, data)
            # Old consumers wrote -1 for "nothing consumed yet": no position.
            if offset >= 0:
                out[TopicPartition(topic, int(child))] = offset
    return out


def groups(session: ZooKeeperSession) -> list[str]:
    """Groups with an entry under /consumers, sorted."""
    return session.children(CONSUMERS_PATH) or []


def store_offsets(session: ZooKeeperSession, group: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Write each partition's offset in the old consumers' format (creating the znodes as needed)."""
    for tp in sorted(offsets):
        session.put(offset_path(group, tp.topic, tp.partition), encode_offset(offsets[tp]))
