"""The sink refuses unsafe loads and resumes from the table alone, even after Delta log cleanup."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid

import pytest
from deltalake import DeltaTable

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.groups.admin import GroupAdmin
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta import committed_position, load
from kafka_spark.delta.batch_commit import commit_batch
from kafka_spark.delta.position import offsets_dir
from kafka_spark.delta.storage import delta_rs_location
from kafka_spark.errors import DataLossError
from kafka_spark.sink import BatchAlreadyCommittedError, ConcurrentWriterError, LoadOptions, OffsetsMovedBackwardsError
from kafka_spark.sink.plan import plan_batch


def produce(producer, topic: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        producer.send(topic, f'{{"n":{i}}}'.encode(), key=str(i % 11).encode())
    producer.flush()


def options(kafka, table, topic, **kw) -> LoadOptions:
    return LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], **kw)


def offsets_in_table(spark, table) -> dict[int, list[int]]:
    rows = spark.read.format("delta").load(str(table)).select("partition", "offset").collect()
    out: dict[int, list[int]] = {}
    for r in rows:
        out.setdefault(r["partition"], []).append(r["offset"])
    return {p: sorted(v) for p, v in out.items()}


def test_resume_picks_up_new_records_and_new_partitions(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    produce(producer, topic_name, 400)
    opts = options(kafka, tmp_path / "t", topic_name)
    first = load(spark, opts)
    assert first.status == "committed" and first.batch == 0 and first.rows == 400
    assert load(spark, opts).status == "up-to-date"
    kafka.tools.run("topics", "--alter", "--topic", topic_name, "--partitions", "3")
    produce(producer, topic_name, 300, start=400)
    second = load(spark, opts)
    assert second.batch == 1 and second.rows == 300
    assert TopicPartition(topic_name, 2) in second.offsets
    assert second.start[TopicPartition(topic_name, 2)] == 0
    table = offsets_in_table(spark, tmp_path / "t")
    assert {p: len(v) for p, v in table.items()} == {tp.partition: o for tp, o in second.offsets.items() if o}
    for offsets in table.values():
        assert offsets == list(range(len(offsets)))


def test_rerun_of_a_committed_batch_is_reported_not_written_twice(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    produce(producer, topic_name, 100)
    opts = options(kafka, tmp_path / "t", topic_name)
    with Cluster(opts.kafka) as cluster:
        plan = plan_batch(cluster, None, [], [topic_name], None, "earliest", None, True)
    done = commit_batch(spark, opts, plan, run_id="first-run")
    assert done.rows == 100
    with pytest.raises(BatchAlreadyCommittedError, match=r"already committed .* by run first-run") as info:
        commit_batch(spark, opts, plan, run_id="second-run")
    assert info.value.batch == 0
    assert spark.read.format("delta").load(str(tmp_path / "t")).count() == 100
    assert committed_position(str(tmp_path / "t"), "default").run_id == "first-run"


def race_two_loads(spark, opts: LoadOptions, topic: str) -> list[object]:
    """Two commits of the same planned batch of one sink, from two threads of one driver."""
    with Cluster(opts.kafka) as cluster:
        plan = plan_batch(cluster, None, [], [topic], None, "earliest", None, True)
    results: list[object] = []

    def run(run_id: str) -> None:
        try:
            results.append(commit_batch(spark, opts, plan, run_id=run_id))
        except ConcurrentWriterError as exc:
            results.append(exc)
        except Exception as exc:
            results.append(f"unexpected {type(exc).__name__}: {str(exc)[:500]}")

    threads = [threading.Thread(target=run, args=(f"run-{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_loads_of_one_sink_let_exactly_one_commit(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    produce(producer, topic_name, 2000)
    results = race_two_loads(spark, options(kafka, tmp_path / "t", topic_name), topic_name)
    errors = [r for r in results if isinstance(r, ConcurrentWriterError)]
    assert len(errors) == 1 and len(results) == 2, results
    assert spark.read.format("delta").load(str(tmp_path / "t")).count() == 2000


def test_on_s3_one_driver_s_concurrent_loads_let_exactly_one_commit(kafka, spark_s3, s3, producer, topic_name):
    # Delta's default S3 log store serialises commits inside one driver: "one driver per table" (docs/delta/stores.md).
    kafka.create_topic(topic_name, partitions=2)
    produce(producer, topic_name, 2000)
    table = s3.url(f"race/{topic_name}")
    results = race_two_loads(spark_s3, options(kafka, table, topic_name), topic_name)
    errors = [r for r in results if isinstance(r, ConcurrentWriterError)]
    assert len(errors) == 1 and len(results) == 2, results
    assert spark_s3.read.format("delta").load(table).count() == 2000
    uri, storage = delta_rs_location(table, s3.hadoop_conf())
    assert DeltaTable(uri, storage_options=storage).version() == 0


def test_another_sink_cannot_load_the_same_partitions(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    produce(producer, topic_name, 10)
    load(spark, options(kafka, tmp_path / "t", topic_name, sink_id="a"))
    with pytest.raises(ConcurrentWriterError, match="already loaded into this table by sink 'a'"):
        load(spark, options(kafka, tmp_path / "t", topic_name, sink_id="b"))


def test_offsets_moving_backwards_fail(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    produce(producer, topic_name, 50)
    opts = options(kafka, tmp_path / "t", topic_name)
    load(spark, opts)
    kafka.tools.run("topics", "--delete", "--topic", topic_name)
    deadline = time.monotonic() + 60
    while True:
        try:
            kafka.create_topic(topic_name, partitions=1)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    produce(producer, topic_name, 10)
    with pytest.raises(OffsetsMovedBackwardsError, match="up to 50, but the broker's latest offset is 10"):
        load(spark, opts)


def test_deleted_records_fail_or_are_skipped(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    produce(producer, topic_name, 20)
    opts = options(kafka, tmp_path / "t", topic_name)
    load(spark, opts)
    produce(producer, topic_name, 30, start=20)
    spec = tmp_path / "delete.json"
    spec.write_text(f'{{"partitions":[{{"topic":"{topic_name}","partition":0,"offset":35}}],"version":1}}')
    kafka.tools.run("delete-records", "--offset-json-file", str(spec))
    with pytest.raises(DataLossError, match=r"offsets 20\.\.34 were deleted"):
        load(spark, opts)
    opts.fail_on_data_loss = False
    skipped = load(spark, opts)
    assert skipped.lost == {TopicPartition(topic_name, 0): 15}
    assert skipped.rows == 15
    assert offsets_in_table(spark, tmp_path / "t")[0] == list(range(20)) + list(range(35, 50))


def test_resume_after_delta_log_cleanup_and_publish_to_group(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    table = tmp_path / "t"
    group = f"loader-{uuid.uuid4().hex[:6]}"
    opts = options(kafka, table, topic_name, max_records=10, publish_group=group)
    produce(producer, topic_name, 10)
    load(spark, opts)
    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ("
              "'delta.checkpointInterval'='3', 'delta.logRetentionDuration'='interval 1 hours', "
              "'delta.deletedFileRetentionDuration'='interval 1 hours')")
    for i in range(6):
        produce(producer, topic_name, 10, start=10 * (i + 1))
        load(spark, opts)
        # Delta deletes expired log files when it checkpoints; age them so the next checkpoint does.
        for f in (table / "_delta_log").glob("*.json"):
            old = time.time() - 3 * 86400
            os.utime(f, (old, old))
    remaining = sorted(int(p.name[:20]) for p in (table / "_delta_log").glob("*.json"))
    assert remaining and remaining[0] > 0, "log cleanup removed no commit file"
    last = committed_position(str(table), "default")
    assert last.batch == 6 and last.offsets == {TopicPartition(topic_name, 0): 70}
    # The commit holding batch 1's userMetadata is gone: its offsets come from the kept JSON alone.
    kept = [json.loads(c["userMetadata"])["batch"] for c in DeltaTable(str(table)).history() if c.get("userMetadata")]
    assert 1 not in kept and 6 in kept
    assert (offsets_dir(table, "default") / "1.json").exists()
    assert DeltaTable(str(table)).transaction_version("kafka-spark/default") == 6
    produce(producer, topic_name, 5, start=70)
    assert load(spark, opts).rows == 5
    with Cluster(opts.kafka) as cluster:
        committed = GroupAdmin(cluster).committed(group)
    assert committed[TopicPartition(topic_name, 0)].offset == 75
