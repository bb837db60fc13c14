"""The range assignor of Kafka's consumer protocol (the Java client's ``range``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RANGE = "range"


def range_assign(subscriptions: Mapping[str, Sequence[str]],
                 partitions_per_topic: Mapping[str, int]) -> dict[str, dict[str, list[int]]]:
    """Assign each topic's partitions in contiguous ranges to its subscribers, ordered by member id.

    The first ``n % m`` members (of ``m`` subscribers of a topic with ``n`` partitions) get one extra
    partition. Returns ``{member_id: {topic: [partition, ...]}}`` with every member present.
    """
    assignment: dict[str, dict[str, list[int]]] = {member: {} for member in subscriptions}
    topics = sorted({t for ts in subscriptions.values() for t in ts})
    for topic in topics:
        count = partitions_per_topic.get(topic, 0)
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        if not members or count <= 0:
            continue
        per_member, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            length = per_member + (1 if i < extra else 0)
            if length:
                assignment[member][topic] = list(range(start, start + length))
            start += length
    return assignment
