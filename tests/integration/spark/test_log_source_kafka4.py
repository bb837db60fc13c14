"""`format("pykafka-log")` on a stopped Kafka 4.1 broker's log dir returns what `format("pykafka")` and Spark's
`format("kafka")` return from the broker, with the same options: every codec, headers, LogAppendTime,
aborted transactions that span segments (read_committed), a compacted topic, offset and timestamp bounds,
task splitting; the same files on S3 (s3a://); corrupted copies; and index seeks that read little more
than the range asked for.

One module fixture writes the topics (Kafka's Java producer for codecs and transactions, our producer for
the compacted topic, Kafka's perf producer for a 3-partition topic), stops the broker cleanly, copies its
log dir (the stopped broker's files) and starts the broker again for the two broker formats.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from broker_files import CODECS, ROLLING, copy_log_dir, fill_compacted, wait_compacted
from java_producer import TopicSpec, produce
from log_source_compare import assert_same_rows, load, rows

from kafka_spark.errors import ConfigError, DataLossError
from kafka_spark.local.kafka import KafkaNode
from kafka_spark.segments import PartitionLog, ScanStats, SegmentCorruptError
from kafka_spark.spark.log.options import parse_log_options
from kafka_spark.spark.log.planner import plan_log_batch
from kafka_spark.spark.log.reader import read_log_range


@pytest.fixture(scope="module")
def stopped(log_broker: KafkaNode, producer_classes: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The written topics, a copy of the stopped broker's log dir, and the broker running again."""
    run = uuid.uuid4().hex[:8]
    prefix = f"lsrc-{run}-"
    specs = {codec: TopicSpec(f"{prefix}{codec}", codec, ROLLING) for codec in CODECS}
    specs["lat"] = TopicSpec(f"{prefix}lat", "lz4", {**ROLLING, "message.timestamp.type": "LogAppendTime"})
    produce(producer_classes, "kafka4", log_broker.bootstrap, "transactions", list(specs.values()),
            tmp_path_factory.mktemp("sent"))
    topics = {case: spec.name for case, spec in specs.items()}
    topics["open"] = f"{prefix}open"
    sent = produce(producer_classes, "kafka4", log_broker.bootstrap, "open-transaction",
                   [TopicSpec(topics["open"], "none", ROLLING)], tmp_path_factory.mktemp("sent-open"))
    open_from = min(s.offset for s in sent if s.outcome == "open")
    topics["compacted"] = f"{prefix}compacted"
    fill_compacted(log_broker, topics["compacted"])
    topics["multi"] = f"{prefix}multi"
    log_broker.create_topic(topics["multi"], partitions=3, configs={"segment.bytes": 1 << 20})
    # round robin: every partition gets well over the 500 records the bounds below read, however the
    # batches fall on a busy machine (the default sticky partitioner once left one with 360)
    log_broker.tools.produce_perf(topics["multi"], 6_000, record_size=120, props={
        "compression.type": "lz4", "partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"})
    wait_compacted(log_broker.log_dir, topics["compacted"])
    log_broker.stop()
    copy = copy_log_dir(log_broker.log_dir, topics.values(), tmp_path_factory.mktemp("stopped") / "logs")
    log_broker.start(format_first=False).wait_ready()
    return {"path": str(copy), "topics": topics, "pattern": f"^{prefix}", "open_from": open_from,
            "open_sent": sent}


def test_every_codec_headers_append_time_and_compaction(spark, log_broker: KafkaNode, stopped: dict) -> None:
    got = assert_same_rows(spark, stopped["path"], log_broker.bootstrap, subscribePattern=stopped["pattern"],
                           includeHeaders="true")
    by_topic: dict[str, list] = {}
    for r in got:
        by_topic.setdefault(r["topic"], []).append(r)
    assert set(by_topic) == set(stopped["topics"].values())
    assert len(by_topic[stopped["topics"]["multi"]]) == 6_000
    assert any(r["headers"] for r in by_topic[stopped["topics"]["zstd"]])
    assert {r["timestampType"] for r in by_topic[stopped["topics"]["lat"]]} == {1}
    compacted = [r["offset"] for r in by_topic[stopped["topics"]["compacted"]]]
    assert len(compacted) < compacted[-1] + 1  # the cleaner left gaps


def test_read_committed_drops_aborted_transactions(spark, log_broker: KafkaNode, stopped: dict) -> None:
    pattern = f"{stopped['pattern']}(none|gzip|snappy|lz4|zstd)$"
    committed = assert_same_rows(spark, stopped["path"], log_broker.bootstrap, subscribePattern=pattern,
                                 includeHeaders="true", **{"kafka.isolation.level": "read_committed"})
    everything = rows(load(spark, "pykafka-log", stopped["path"], log_broker.bootstrap,
                           {"subscribePattern": pattern}))
    # Per topic: 31 plain + 9 + 20 + 7 + 4 committed of 92 transactional records and 21 aborted.
    assert len(committed) == 5 * 71
    assert len(everything) == 5 * 92


def test_read_committed_stops_at_an_open_transaction(spark, log_broker: KafkaNode, stopped: dict) -> None:
    """The broker stopped with a transaction open: `latest` is its last stable offset, as the broker says."""
    topic, open_from = stopped["topics"]["open"], stopped["open_from"]
    committed = assert_same_rows(spark, stopped["path"], log_broker.bootstrap, subscribe=topic,
                                 **{"kafka.isolation.level": "read_committed"})
    assert committed[-1]["offset"] < open_from
    expected = sorted(s.offset for s in stopped["open_sent"]
                      if s.outcome in ("none", "commit") and s.offset < open_from)
    assert [r["offset"] for r in committed] == expected
    # read_uncommitted reads past it to the high watermark: the open and the later committed records.
    every = assert_same_rows(spark, stopped["path"], log_broker.bootstrap, ("pykafka-log", "pykafka"), subscribe=topic)
    assert {s.offset for s in stopped["open_sent"]} <= {r["offset"] for r in every}
    with PartitionLog.open(f"{stopped['path']}/{topic}-0") as plog:
        assert plog.last_stable_offset == open_from < plog.high_watermark


def test_offset_bounds_timestamps_and_task_splitting(spark, log_broker: KafkaNode, stopped: dict) -> None:
    path, bootstrap, topic = stopped["path"], log_broker.bootstrap, stopped["topics"]["multi"]
    bounds = {"startingOffsets": f'{{"{topic}":{{"0":17,"1":-2,"2":-2}}}}',
              "endingOffsets": f'{{"{topic}":{{"0":-1,"1":0,"2":500}}}}'}
    got = assert_same_rows(spark, path, bootstrap, subscribe=topic, **bounds)
    assert {r["partition"] for r in got} <= {0, 2} and got[0]["offset"] == 17
    whole = rows(load(spark, "pykafka-log", path, bootstrap, {"subscribe": topic}))
    for option, parts in (("minPartitions", 12), ("maxRecordsPerPartition", 500)):
        df = load(spark, "pykafka-log", path, bootstrap, {"subscribe": topic, option: str(parts)})
        # Spark rounds each partition's share of minPartitions (11 to 13 tasks for 12); log tasks follow
        # segments, and maxRecordsPerPartition cuts them further.
        assert df.rdd.getNumPartitions() >= 11
        assert rows(df) == whole
    stamps = sorted(r["timestamp"] for r in whole)
    cut = str(int(stamps[len(stamps) // 2].timestamp() * 1000))
    assert_same_rows(spark, path, bootstrap, subscribe=topic, startingTimestamp=cut,
                     startingOffsetsByTimestampStrategy="latest")
    two = ("pykafka-log", "pykafka")
    assert_same_rows(spark, path, bootstrap, two, subscribe=topic, endingTimestamp=cut)
    by_ts = f'{{"{topic}":{{"0":{cut},"1":-2,"2":{cut}}}}}'
    assert_same_rows(spark, path, bootstrap, two, subscribe=topic, startingOffsetsByTimestamp=by_ts,
                     startingOffsetsByTimestampStrategy="latest")
    assert_same_rows(spark, path, bootstrap, two, assign=f'{{"{topic}":[2]}}')
    # The Java producer's timestamps jump back and forth: seeks must still agree with Spark's source.
    pattern = f"{stopped['pattern']}(gzip|lat)$"
    assert_same_rows(spark, path, bootstrap, ("pykafka-log", "kafka"), subscribePattern=pattern,
                     startingTimestamp=cut, startingOffsetsByTimestampStrategy="latest")


def test_options_fail_as_pykafkas_do(spark, log_broker: KafkaNode, stopped: dict) -> None:
    path = stopped["path"]
    with pytest.raises(Exception, match="unknown option 'startingoffset' for the pykafka-log source; did you mean"):
        load(spark, "pykafka-log", path, "", {"subscribe": "t", "startingOffset": "earliest"})
    with pytest.raises(Exception, match="One of the following options must be specified for Kafka source"):
        load(spark, "pykafka-log", path, "", {})
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries on Kafka"):
        load(spark, "pykafka-log", path, "", {"subscribe": "t", "startingOffsets": "latest"}).count()
    with pytest.raises(Exception, match="reads log files in batch queries only"):
        (spark.readStream.format("pykafka-log").option("path", path).option("subscribe", "t").load()
         .writeStream.format("noop").start().awaitTermination(60))
    with pytest.raises(ConfigError, match="option 'path' must name one or more Kafka log directories"):
        parse_log_options({"subscribe": "t"})
    with pytest.raises(ConfigError, match="no directory matches"):
        plan_log_batch(parse_log_options({"subscribe": "t", "path": f"{path}-nothing*"}))
    with pytest.raises(ConfigError, match="'replicaLogDir'"):
        plan_log_batch(parse_log_options({"subscribe": "t", "path": path, "replicaLogDir": "/elsewhere"}))
    with pytest.raises(Exception, match="is in none of the log dirs"):
        plan_log_batch(parse_log_options({"subscribe": "no-such-topic", "path": path}))
    with pytest.raises(ConfigError, match="startingOffsetsFromZooKeeperGroup"):
        parse_log_options({"subscribe": "t", "path": path, "startingOffsetsFromZooKeeperGroup": "g",
                           "kafka.zookeeper.connect": "127.0.0.1:1"})
    topic = stopped["topics"]["multi"]
    with pytest.raises(DataLossError, match="partition ends at"):
        plan_log_batch(parse_log_options({"assign": f'{{"{topic}":[0]}}', "path": path,
                                          "endingOffsets": f'{{"{topic}":{{"0":99999999}}}}'}))


def test_s3a_copy_of_the_log_dir(spark, log_broker: KafkaNode, stopped: dict, s3) -> None:
    from pyarrow import fs as pafs

    s3fs = pafs.S3FileSystem(access_key=s3.access_key, secret_key=s3.secret_key, region=s3.region,
                             endpoint_override=s3.endpoint.removeprefix("http://"), scheme="http")
    prefix = f"kafka-logs/{uuid.uuid4().hex[:8]}"
    pafs.copy_files(stopped["path"], f"{s3.bucket}/{prefix}/broker-1", destination_filesystem=s3fs)
    options = {"subscribePattern": stopped["pattern"], "includeHeaders": "true",
               "kafka.isolation.level": "read_committed", **s3.hadoop_conf()}
    from_s3 = rows(load(spark, "pykafka-log", s3.url(f"{prefix}/broker-*"), "", options))
    local = rows(load(spark, "pykafka-log", stopped["path"], "", options))
    assert from_s3 == local and len(local) > 6_000


def _truth(path: str, topic: str) -> dict[int, tuple]:
    with PartitionLog.open(f"{path}/{topic}-0") as plog:
        return {r["offset"]: r for b in plog.read(include_headers=True) for r in b.to_pylist()}


def _corrupt_copies(source: Path, dest: Path, seed: int) -> list[tuple[str, Path]]:
    """Copies of a partition dir: each with one segment truncated at a random point or with bytes flipped."""
    rng = random.Random(seed)
    logs = sorted(source.glob("*.log"))
    out = []
    for i in range(6):
        copy = dest / f"c{i}" / source.name
        copy_log_dir(source.parent, [source.name.rpartition("-")[0]], copy.parent)
        victim = copy / rng.choice(logs).name
        data = bytearray(victim.read_bytes())
        if i % 2 == 0:
            victim.write_bytes(data[: rng.randrange(1, len(data))])
            out.append(("truncated", copy))
        else:
            # Inside a batch's CRC-covered bytes (past its 21-byte prefix): a flip there is detectable.
            for _ in range(3):
                data[rng.randrange(21, len(data))] ^= 1 << rng.randrange(8)
            victim.write_bytes(bytes(data))
            out.append(("flipped", copy))
    return out


def test_corrupt_copies_error_clearly_or_skip_and_count(spark, stopped: dict, tmp_path: Path) -> None:
    topic = stopped["topics"]["zstd"]
    truth = _truth(stopped["path"], topic)
    errors = 0
    for kind, copy in _corrupt_copies(Path(stopped["path"]) / f"{topic}-0", tmp_path, seed=14):
        path = str(copy.parent)
        options = parse_log_options({"path": path, "subscribe": topic, "includeHeaders": "true"})
        try:
            got = [r for t in plan_log_batch(options) for b in read_log_range(options, t) for r in b.to_pylist()]
        except SegmentCorruptError as exc:
            assert kind == "flipped" and str(copy) in str(exc) and "corrupt batch at byte" in str(exc)
            got = None
            errors += 1
        if got is not None:  # never a row that was not in the log
            assert all(truth[r["offset"]] == r for r in got), kind
        skipping = replace(options, skip_corrupt=True)
        stats = ScanStats()
        kept = [r for t in plan_log_batch(skipping) for b in read_log_range(skipping, t, stats) for r in b.to_pylist()]
        assert all(truth[r["offset"]] == r for r in kept), kind
        if got is None:
            assert stats.corrupt_batches >= 1 and stats.skipped_bytes > 0
        df = load(spark, "pykafka-log", path, "", {"subscribe": topic, "includeHeaders": "true",
                                                   "skipCorruptBatches": "true"})
        assert len(rows(df)) == len(kept)
    assert errors >= 1


def test_index_seeks_read_about_the_range(log_broker: KafkaNode, tmp_path: Path) -> None:
    topic = f"lsrc-seeks-{uuid.uuid4().hex[:8]}"
    log_broker.tools.produce_perf(topic, 200_000, record_size=100, props={"batch.size": 16384})
    path = copy_log_dir(log_broker.log_dir, [topic], tmp_path / "logs")
    with PartitionLog.open(str(path / f"{topic}-0")) as plog:
        end = plog.log_end_offset
        assert end == 200_000 and len(plog.segments) > 5
        lo = end // 2 + 777
        hi = lo + end // 100
        # The bytes of the batches that hold the range: what an ideal reader reads.
        range_bytes = sum(b.size for s in plog.segments_for(lo, hi) for b in s.batches()
                          if b.last_offset >= lo and (b.base_offset or 0) < hi)
    options = parse_log_options({"path": str(path), "subscribe": topic,
                                 "startingOffsets": f'{{"{topic}":{{"0":{lo}}}}}',
                                 "endingOffsets": f'{{"{topic}":{{"0":{hi}}}}}'})
    stats = ScanStats()
    offsets = [o for t in plan_log_batch(options) for b in read_log_range(options, t, stats)
               for o in b.column("offset").to_pylist()]
    assert offsets == list(range(lo, hi))
    assert stats.bytes_read < 2 * range_bytes, (stats.bytes_read, range_bytes)
