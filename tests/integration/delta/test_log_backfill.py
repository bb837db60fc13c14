"""Back-filling a table from a broker's log dir (`LoadOptions(log_dirs=...)`): the rows equal a `pykafka` read of
the same offsets with Delta on Spark and delta-rs, on both writers; a second back-fill adds only the new records;
a load from the brokers continues the position; a back-fill killed right after its commit re-runs exactly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from delta_support import ROW_COLUMNS, delta_rs_rows, latest_offsets_of, produce_numbered, run_killable, spark_rows
from deltalake import DeltaTable

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta import committed_position, load
from kafka_spark.segments import PartitionLog
from kafka_spark.sink import LoadOptions

COLUMNS = ROW_COLUMNS
# Segments roll every 100 ms, so a back-fill crosses several of them per partition.
ROLLING = {"segment.ms": "100"}
LOG_LOAD_ONCE = Path(__file__).parent / "log_load_once.py"


def produce_in_rounds(producer, topic: str, n: int, start: int = 0, rounds: int = 3) -> None:
    step = n // rounds
    for r in range(rounds):
        produce_numbered(producer, topic, step if r < rounds - 1 else n - step * r, start=start + step * r)
        time.sleep(0.15)


def files_reach(log_dir: Path, topic: str, ends: dict[TopicPartition, int], timeout: float = 30.0) -> None:
    """Until the files' high watermarks reach `ends` (the broker checkpoints them every few seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        marks = {}
        for tp in ends:
            with PartitionLog.open(str(log_dir / f"{tp.topic}-{tp.partition}")) as plog:
                marks[tp] = plog.high_watermark
        if marks == ends:
            return
        assert time.monotonic() < deadline, f"{topic}: the checkpointed high watermarks {marks} did not reach {ends}"
        time.sleep(0.25)


def backfill(kafka, table: Path, topic: str, **kw: Any) -> LoadOptions:
    return LoadOptions(table=str(table), log_dirs=str(kafka.log_dir), topics=[topic], **kw)


def pykafka_rows(spark, kafka, topic: str, ends: dict[TopicPartition, int]) -> list[tuple]:
    ending = json.dumps({topic: {str(tp.partition): end for tp, end in ends.items()}})
    df = (spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", ending).load())
    return sorted(tuple(r) for r in df.select(*COLUMNS).collect())


def test_backfill_from_the_log_dir_then_again_then_from_the_brokers(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2, configs=ROLLING)
    direct, reference = tmp_path / "direct", tmp_path / "spark"
    produce_in_rounds(producer, topic_name, 120)
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    files_reach(kafka.log_dir, topic_name, ends)
    first = load(spark, backfill(kafka, direct, topic_name))
    assert (first.status, first.writer, first.batch, first.rows) == ("committed", "direct", 0, 120)
    assert first.start == {tp: 0 for tp in ends} and first.offsets == ends
    by_spark = load(spark, backfill(kafka, reference, topic_name, writer="spark"))
    assert (by_spark.writer, by_spark.offsets) == ("spark", ends)
    expected = pykafka_rows(spark, kafka, topic_name, ends)
    assert len(expected) == 120
    assert spark_rows(spark, direct) == spark_rows(spark, reference) == expected
    assert delta_rs_rows(direct) == delta_rs_rows(reference)
    assert DeltaTable(str(direct)).schema().to_json() == DeltaTable(str(reference)).schema().to_json()

    # A second back-fill takes only what the files gained; a third finds nothing.
    produce_in_rounds(producer, topic_name, 60, start=120, rounds=2)
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    files_reach(kafka.log_dir, topic_name, ends)
    second = load(spark, backfill(kafka, direct, topic_name))
    assert (second.status, second.batch, second.rows, second.start, second.offsets) == (
        "committed", 1, 60, first.offsets, ends)
    assert load(spark, backfill(kafka, direct, topic_name)).status == "up-to-date"

    # The brokers continue the same sink's position.
    produce_numbered(producer, topic_name, 30, start=180)
    third = load(spark, LoadOptions(table=str(direct), kafka={"bootstrap.servers": kafka.bootstrap},
                                    topics=[topic_name]))
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    assert (third.batch, third.rows, third.start, third.offsets) == (2, 30, second.offsets, ends)
    assert spark_rows(spark, direct) == pykafka_rows(spark, kafka, topic_name, ends)
    assert len({(r[3], r[4]) for r in spark_rows(spark, direct)}) == 210
    assert committed_position(str(direct), "default").offsets == ends
    # The files now end before the table's position (a checkpoint behind): nothing to add, no error.
    assert load(spark, backfill(kafka, direct, topic_name)).status == "up-to-date"


def test_a_killed_backfill_reruns_exactly_and_the_pykafka_log_plan_hides_the_secret(kafka, spark, producer,
                                                                                     topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2, configs=ROLLING)
    table = tmp_path / "table"
    produce_in_rounds(producer, topic_name, 100)
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    files_reach(kafka.log_dir, topic_name, ends)
    code, out = run_killable(LOG_LOAD_ONCE, str(kafka.log_dir), topic_name, str(table), "60",
                             crash_at="after-commit", writer="direct")
    assert code == -9, out
    # The killed run committed batch 0 (60 offsets) and died before keeping its offsets beside the table.
    position = committed_position(str(table), "crash-test")
    assert (position.batch, sum(position.offsets.values())) == (0, 60)
    rerun = load(spark, backfill(kafka, table, topic_name, sink_id="crash-test", writer="spark"))
    assert (rerun.batch, rerun.rows, rerun.start, rerun.offsets) == (1, 40, position.offsets, ends)
    assert spark_rows(spark, table) == pykafka_rows(spark, kafka, topic_name, ends)

    # pykafka-log takes the direct writer's options; the secret one never reaches a plan.
    secret = "not-for-plans-7f3a"
    df = (spark.read.format("pykafka-log").option("path", str(kafka.log_dir)).option("subscribe", topic_name)
          .option("directWriteTo", json.dumps({"writer": "kafka_spark.sink.parquet.files:write_range",
                                               "rows": "path string", "spec": {}}))
          .option("directWriteSecret", secret).load())
    assert df.columns == ["path"]
    qe = df._jdf.queryExecution()
    assert not any(secret in text for text in (qe.toString(), qe.logical().toString(), qe.executedPlan().toString()))
    # Wherever Spark shows a source's options (plans, the UI, the event log), it redacts them so.
    redacted = spark_redacted(spark, {"path": str(kafka.log_dir), "directWriteSecret": secret})
    assert secret not in redacted and str(kafka.log_dir) in redacted


def spark_redacted(spark, options: dict[str, str]) -> str:
    """`options` as Spark's SQLConf.redactOptions shows them."""
    jvm = spark._jvm
    given = jvm.java.util.HashMap()
    for k, v in options.items():
        given.put(k, v)
    evidence = getattr(getattr(jvm, "scala.$less$colon$less$"), "MODULE$").refl()
    scala_map = jvm.scala.jdk.javaapi.CollectionConverters.asScala(given).toMap(evidence)
    return str(spark._jsparkSession.sessionState().conf().redactOptions(scala_map).toString())
