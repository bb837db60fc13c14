"""Broker-level faults on the 3-node KRaft cluster, and the way back to a healthy cluster.

Each fault is a function of (cluster, topics) that breaks something and waits until the cluster has
absorbed it (a new leader, a finished reassignment, a restarted broker back in every ISR). Kafka's own
tools do the administration (ReassignPartitionsCommand, LeaderElectionCommand); our client only reads
metadata to see when a step is done.
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.cluster import KafkaCluster

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.client.metadata import PartitionInfo
from kafka_spark.local import KafkaNode
from kafka_spark.local.jars import classpath
from kafka_spark.local.process import java_argv

# A killed node is fenced after broker.session.timeout.ms (9 s); a restart and catch-up take longer.
SETTLE_S = 120.0
# The "disk" of a node that has run full: no file of the process may grow past this (RLIMIT_FSIZE).
FULL_DISK_BYTES = 16 * 1024


def partitions(cluster: KafkaCluster, topics: Sequence[str]) -> dict[TopicPartition, PartitionInfo]:
    """Fresh metadata of every partition of `topics`, from whichever nodes answer."""
    with KafkaClient({"bootstrap.servers": cluster.bootstrap, "default.api.timeout.ms": 20000,
                      "request.timeout.ms": 5000}) as client:
        meta = client.metadata(list(topics))
        return {tp: info for t in topics for tp in meta.partitions_for(t)
                if (info := meta.partition(tp)) is not None}


def wait_until(check: Callable[[], bool], what: str, timeout: float = SETTLE_S) -> None:
    """Poll `check` (errors count as "not yet") until it holds; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:  # a node is down or the metadata is moving: look again
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"the cluster did not reach '{what}' in {timeout:.0f}s (last error: {last})")


def fully_replicated(cluster: KafkaCluster, topics: Sequence[str]) -> bool:
    """Every partition has a leader and every replica in its ISR."""
    infos = partitions(cluster, topics)
    return bool(infos) and all(i.leader >= 0 and set(i.isr) == set(i.replicas) for i in infos.values())


def leader_of(cluster: KafkaCluster, topic: str, partition: int = 0) -> int:
    return partitions(cluster, [topic])[TopicPartition(topic, partition)].leader


def _tool(main: str, args: Sequence[str]) -> str:
    argv = java_argv(classpath("kafka4"), main, list(args), heap="256m", short_lived=True)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    return proc.stdout + proc.stderr


def elect_preferred(cluster: KafkaCluster, tps: Sequence[TopicPartition] | None = None) -> str:
    """Kafka's LeaderElectionCommand, preferred election of `tps` (None: every partition); its output."""
    args = ["--bootstrap-server", cluster.bootstrap, "--election-type", "preferred"]
    if tps is None:
        return _tool("org.apache.kafka.tools.LeaderElectionCommand", [*args, "--all-topic-partitions"])
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in tps]}, f)
    try:
        return _tool("org.apache.kafka.tools.LeaderElectionCommand", [*args, "--path-to-json-file", f.name])
    finally:
        Path(f.name).unlink()


def reassign(cluster: KafkaCluster, target: dict[TopicPartition, list[int]]) -> None:
    """Kafka's ReassignPartitionsCommand to `target` replicas; waits until each is done and in sync."""
    plan = {"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition, "replicas": r}
                                         for tp, r in target.items()]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(plan, f)
    try:
        out = _tool("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                    ["--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", f.name, "--execute"])
    finally:
        Path(f.name).unlink()
    assert "Successfully started" in out, out[-2000:]
    topics = sorted({tp.topic for tp in target})

    def done() -> bool:
        infos = partitions(cluster, topics)
        return all(list(infos[tp].replicas) == r and set(infos[tp].isr) == set(r) and infos[tp].leader in r
                   for tp, r in target.items())

    wait_until(done, "reassignment complete")


def start_node(node: KafkaNode) -> None:
    """Start a stopped node on its existing data (no format) and wait until it answers."""
    node.start(format_first=False)
    node.wait_ready(SETTLE_S)


def restore(cluster: KafkaCluster, topics: Sequence[str]) -> None:
    """Back to the healthy cluster other tests expect: every node up, `topics` in sync, leaders preferred."""
    for node in cluster.nodes:
        if node.process is None or not node.process.alive():
            start_node(node)
    wait_until(lambda: fully_replicated(cluster, topics), "every replica in sync")
    elect_preferred(cluster)


# ---- the faults ------------------------------------------------------------------------------------------


def kill_leader(cluster: KafkaCluster, topics: Sequence[str]) -> str:
    """kill -9 of the leader of partition 0, wait for a new leader, start it again, wait until it caught up."""
    topic = topics[0]
    victim = leader_of(cluster, topic)
    cluster.node(victim).kill()
    wait_until(lambda: leader_of(cluster, topic) not in (-1, victim), "a new leader after kill -9")
    start_node(cluster.node(victim))
    wait_until(lambda: fully_replicated(cluster, topics), "the killed node back in every ISR")
    return f"killed node {victim} (leader of {topic}-0)"


def restart_leader(cluster: KafkaCluster, topics: Sequence[str]) -> str:
    """Graceful restart (SIGTERM: controlled shutdown) of the leader of partition 0, then wait for catch-up."""
    victim = leader_of(cluster, topics[0])
    cluster.node(victim).restart(SETTLE_S)
    wait_until(lambda: fully_replicated(cluster, topics), "the restarted node back in every ISR")
    return f"restarted node {victim}"


def reassign_partition(cluster: KafkaCluster, topics: Sequence[str]) -> str:
    """Move partition 0 of each topic off its leader ([a, b, c] -> [b, c]: leadership must move), then back
    onto it ([b, c, a]: node a copies the whole partition again from offset 0)."""
    infos = partitions(cluster, topics)
    tps = [TopicPartition(t, 0) for t in topics]
    original = {tp: [infos[tp].leader, *(r for r in infos[tp].replicas if r != infos[tp].leader)] for tp in tps}
    reassign(cluster, {tp: r[1:] for tp, r in original.items()})
    reassign(cluster, {tp: [*r[1:], r[0]] for tp, r in original.items()})
    return f"reassigned {', '.join(f'{tp}: {r} -> {r[1:]} -> {[*r[1:], r[0]]}' for tp, r in original.items())}"


def preferred_election(cluster: KafkaCluster, topics: Sequence[str]) -> str:
    """Make another replica preferred (a reorder-only reassignment moves no data), then elect it: every
    partition's leadership moves while the readers run."""
    infos = partitions(cluster, topics)
    rotated = {tp: [*i.replicas[1:], i.replicas[0]] for tp, i in infos.items()}
    reassign(cluster, rotated)
    before = {tp: infos[tp].leader for tp in rotated}
    out = elect_preferred(cluster, list(rotated))
    wait_until(lambda: all(i.leader == rotated[tp][0] for tp, i in partitions(cluster, topics).items()),
               "every partition led by its new preferred replica")
    moved = sum(before[tp] != rotated[tp][0] for tp in rotated)
    assert moved, out[-2000:]
    return f"preferred election moved {moved} of {len(rotated)} leaders"


def follower_disk_full(cluster: KafkaCluster, topics: Sequence[str]) -> str:
    """A follower's disk runs full: emulated by RLIMIT_FSIZE on its JVM (no file may grow past 16 KiB; a
    write past it fails with EFBIG, as one on a full disk fails with ENOSPC). A real small filesystem
    (tmpfs, a loop device) needs root; the broker sees the same thing either way: a failing write in its
    only log dir, after which it takes itself out of the cluster. Then it is started again (no limit)."""
    infos = partitions(cluster, topics)
    info = infos[TopicPartition(topics[0], 0)]
    victim = next(r for r in info.replicas if r != info.leader)
    node = cluster.node(victim)
    assert node.process is not None and node.process.pid is not None
    resource.prlimit(node.process.pid, resource.RLIMIT_FSIZE, (FULL_DISK_BYTES, FULL_DISK_BYTES))

    def out_of_isr() -> bool:
        return all(victim not in i.isr for i in partitions(cluster, topics).values())

    wait_until(out_of_isr, "the full follower out of every ISR")
    died = not node.process.alive()
    node.stop(grace=10)
    start_node(node)
    wait_until(lambda: fully_replicated(cluster, topics), "the follower back in every ISR")
    return f"node {victim} (a follower of {topics[0]}-0) ran full and {'halted' if died else 'left the ISRs'}"


FAULTS: dict[str, Callable[[KafkaCluster, Sequence[str]], str]] = {
    "kill_leader": kill_leader,
    "restart_leader": restart_leader,
    "reassign": reassign_partition,
    "preferred_election": preferred_election,
    "follower_disk_full": follower_disk_full,
}
