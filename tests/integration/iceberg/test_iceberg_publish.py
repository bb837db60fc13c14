"""`publish_group` into Iceberg: after each snapshot, the table's committed offsets are mirrored to the Kafka
consumer group, so Kafka's lag tools see the pipeline; never before the snapshot, so the group is never ahead of
the table. Loads by both writers (one whose snapshot fails, one that dies between its snapshot and the publishing,
then a load that finds nothing new and publishes) and a stream whose micro-batch dies between its snapshot and
the publishing, restarted. The group and the table are read at the commit protocol's points, and the group's
offsets by kafka-python's admin client, not by the project's client."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from delta_support import latest_offsets_of
from iceberg_support import every_offset_once, new_topic, produce

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.iceberg import batch_append, committed_position, load, start_stream
from kafka_spark.sink import LoadOptions, StreamOptions

pytestmark = [pytest.mark.integration, pytest.mark.spark,
              # kafka-python's own message loading, at every request
              pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")]

TABLE, SINK = "db.published", "mirrored"


@pytest.fixture(scope="module")
def admin(kafka) -> Iterator[Any]:
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    yield client
    client.close()


def group_offsets(admin, group: str) -> dict[TopicPartition, int]:
    """The group's committed offsets, as kafka-python reads them ({} for a group with none). Retriable errors (the
    offsets topic being created on a fresh broker: no coordinator yet) are tried again."""
    from kafka.errors import KafkaError

    for attempt in range(50):
        try:
            committed = admin.list_group_offsets(group)[group]
        except KafkaError as exc:
            if not exc.retriable or attempt == 49:
                raise
            time.sleep(0.2)
            continue
        return {TopicPartition(tp.topic, tp.partition): meta.offset for tp, meta in committed.items()
                if meta.offset >= 0}
    raise AssertionError("unreachable")


def table_offsets(catalog) -> dict[TopicPartition, int]:
    position = committed_position(TABLE, SINK, catalog)
    return {} if position is None else dict(position.offsets)


class _Stop(Exception):
    pass


class Watch:
    """Reads the group and the table at the commit protocol's points: just before each snapshot's commit and just
    after it (before anything is published); `stop(name, nth)` makes the nth coming visit of that point fail."""

    def __init__(self, admin, catalog, group: str) -> None:
        self.admin, self.catalog, self.group = admin, catalog, group
        self.seen: list[tuple[str, dict[TopicPartition, int], dict[TopicPartition, int]]] = []
        self.stop_at: tuple[str, int] | None = None

    def stop(self, name: str, nth: int = 1) -> None:
        self.stop_at = (name, nth)

    def __call__(self, name: str) -> None:
        if name not in ("before-commit", "after-commit"):
            return
        self.seen.append((name, group_offsets(self.admin, self.group), table_offsets(self.catalog)))
        if self.stop_at is not None and self.stop_at[0] == name:
            nth = self.stop_at[1] - 1
            self.stop_at = (name, nth) if nth else None
            if not nth:
                raise _Stop(name)

    def check(self, exact: bool = True) -> None:
        """At every point seen the group was not ahead of the table, and nothing was published between a commit's
        two points. `exact`: the group held exactly the table's previous commit: before the commit the table's
        position, after it the one the table had before that commit."""
        assert self.seen
        before: tuple[dict[TopicPartition, int], dict[TopicPartition, int]] = ({}, {})
        for name, group, table in self.seen:
            assert all(off <= table.get(tp, -1) for tp, off in group.items()), ("ahead of the table", name, group)
            if name == "before-commit":
                before = (group, table)
            else:
                assert group == before[0], ("published before the commit returned", group, before[0])
            if exact:
                assert group == before[1], (name, group, table)


def test_a_load_publishes_the_committed_offsets_after_each_snapshot(kafka, spark, producer, catalog, admin,
                                                                   monkeypatch):
    topic, group = new_topic(kafka, partitions=2), f"lag-{uuid.uuid4().hex[:8]}"
    produce(producer, topic, 30)
    watch = Watch(admin, catalog, group)
    monkeypatch.setattr(batch_append, "crash_point", watch)
    opts = LoadOptions(table=TABLE, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], sink_id=SINK,
                       max_records=20, publish_group=group)
    first = load(spark, opts, catalog)
    assert (first.status, first.batch, first.rows, first.writer) == ("committed", 0, 20, "direct")
    assert group_offsets(admin, group) == table_offsets(catalog) == first.offsets
    second = load(spark, dataclasses.replace(opts, writer="pyiceberg"), catalog)
    assert (second.batch, second.rows, second.writer) == (1, 10, "pyiceberg")
    assert group_offsets(admin, group) == table_offsets(catalog) == second.offsets
    assert sum(second.offsets.values()) == 30

    # A load whose snapshot does not commit publishes nothing: the group stays where the table is.
    produce(producer, topic, 6, start=30)
    watch.stop("before-commit")
    with pytest.raises(_Stop):
        load(spark, opts, catalog)
    assert group_offsets(admin, group) == table_offsets(catalog) == second.offsets

    # A load that dies between its snapshot and the publishing leaves the group behind the table, never ahead;
    # the next load, with nothing new to read, publishes the table's offsets.
    watch.stop("after-commit")
    with pytest.raises(_Stop):
        load(spark, opts, catalog)
    committed = table_offsets(catalog)
    assert sum(committed.values()) == 36 and group_offsets(admin, group) == second.offsets
    assert load(spark, opts, catalog).status == "up-to-date"
    assert group_offsets(admin, group) == committed
    every_offset_once(catalog, TABLE, committed)
    watch.check()
    assert [name for name, _, _ in watch.seen] == ["before-commit", "after-commit"] * 2 + ["before-commit"] + [
        "before-commit", "after-commit"]


def stream_options(kafka, topic: str, group: str, **extra) -> StreamOptions:
    return StreamOptions(table=TABLE, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], sink_id=SINK,
                         trigger="available-now", writer="pyiceberg", publish_group=group, **extra)


def run(spark, opts: StreamOptions, catalog) -> Any:
    query = start_stream(spark, opts, catalog)
    try:
        query.awaitTermination(300)
    finally:
        query.stop()
    return query


def test_a_stream_publishes_each_micro_batch_after_its_commit(kafka, spark, producer, catalog, admin, monkeypatch):
    topic, group = new_topic(kafka, partitions=2), f"lag-{uuid.uuid4().hex[:8]}"
    produce(producer, topic, 30)
    watch = Watch(admin, catalog, group)
    monkeypatch.setattr(batch_append, "crash_point", watch)
    published: list[tuple[int, dict[TopicPartition, int], dict[TopicPartition, int]]] = []

    def on_commit(batch_id: int, result) -> None:  # after the micro-batch's commit and its publishing
        published.append((batch_id, group_offsets(admin, group), dict(result.offsets)))

    opts = stream_options(kafka, topic, group, max_offsets_per_trigger=10, on_commit=on_commit)
    # The second micro-batch dies between its snapshot and the publishing: the group stays at the first's.
    watch.stop("after-commit", 2)
    with pytest.raises(Exception, match="_Stop"):
        run(spark, opts, catalog)
    assert [(b, group) for b, group, _ in published] == [(0, published[0][2])]
    assert group_offsets(admin, group) == published[0][2]
    committed = table_offsets(catalog)
    assert all(committed[tp] >= off for tp, off in published[0][2].items())
    assert sum(committed.values()) > sum(published[0][2].values())

    # The restarted query replays that micro-batch (the table has it: nothing is written) and goes on; every
    # micro-batch is published after its commit, and at the end the group is where the table is: at the end of
    # the topic.
    produce(producer, topic, 8, start=30)
    query = run(spark, opts, catalog)
    assert query.exception() is None
    ends = latest_offsets_of(kafka.bootstrap, topic)
    assert sum(ends.values()) == 38
    assert table_offsets(catalog) == group_offsets(admin, group) == ends
    later = published[1:]
    assert later and all(group == offsets for _, group, offsets in later), later
    assert later[-1][2] == ends
    every_offset_once(catalog, TABLE, ends)
    watch.check(exact=False)
    # Each commit was seen once before and once after it (the replay committed nothing), one of them stopped.
    assert [name for name, _, _ in watch.seen] == ["before-commit", "after-commit"] * (len(published) + 1)


def test_a_restarted_stream_publishes_the_micro_batch_it_replays(kafka, spark, producer, catalog, admin,
                                                                 monkeypatch):
    topic, group = new_topic(kafka, partitions=2), f"lag-{uuid.uuid4().hex[:8]}"
    produce(producer, topic, 10)
    watch = Watch(admin, catalog, group)
    monkeypatch.setattr(batch_append, "crash_point", watch)
    opts = stream_options(kafka, topic, group)
    watch.stop("after-commit")  # the only micro-batch dies between its snapshot and the publishing
    with pytest.raises(Exception, match="_Stop"):
        run(spark, opts, catalog)
    committed = table_offsets(catalog)
    assert sum(committed.values()) == 10 and group_offsets(admin, group) == {}
    # Nothing new: the restarted query's only micro-batch is the replay, which must publish what the table holds.
    query = run(spark, opts, catalog)
    assert query.exception() is None and table_offsets(catalog) == committed
    assert group_offsets(admin, group) == committed
