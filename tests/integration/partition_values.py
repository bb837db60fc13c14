"""Reading a topic's values back, partition by partition, to check what producers wrote."""

from __future__ import annotations

from kafka_spark.client import KafkaClient, TopicPartition


def read_back(bootstrap: str, topic: str, partitions: int, committed: bool = False) -> dict[int, list[bytes]]:
    """Every value of each of the topic's first `partitions` partitions, in offset order (`committed`: those of
    committed transactions only)."""
    isolation = "read_committed" if committed else "read_uncommitted"
    with KafkaClient({"bootstrap.servers": bootstrap, "isolation.level": isolation}) as client:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = client.latest_offsets(tps)
        out: dict[int, list[bytes]] = {}
        for tp in tps:
            table = client.fetch(topic, tp.partition, 0, ends[tp]).read_all()
            out[tp.partition] = [] if table is None else table.column("value").to_pylist()
    return out
