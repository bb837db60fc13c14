"""`format("pykafka")` returns the same DataFrame as Spark's built-in `format("kafka")` with the same options."""

from __future__ import annotations

import subprocess
import sys

import pytest
from chispa import assert_df_equality

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def codec_topics(kafka):
    """One 3-partition topic per compression codec, written by Kafka's Java producer."""
    topics = {}
    for codec in CODECS:
        name = f"pykafka-batch-{codec}"
        kafka.create_topic(name, partitions=3)
        kafka.tools.produce_perf(name, 3000, record_size=120, props={"compression.type": codec, "linger.ms": 20})
        topics[codec] = name
    return topics


def read_both(spark, kafka, **options):
    def load(fmt):
        reader = spark.read.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap)
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load()

    return load("pykafka"), load("kafka")


@pytest.mark.parametrize("codec", CODECS)
def test_same_rows_as_sparks_source_for_every_codec(spark, kafka, codec_topics, codec):
    ours, theirs = read_both(spark, kafka, subscribe=codec_topics[codec])
    assert ours.schema == theirs.schema
    assert ours.count() == 3000
    assert_df_equality(ours, theirs, ignore_row_order=True)


def partition_sizes(spark, kafka, topic):
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
            .load().groupBy("partition").count().collect())
    return {r["partition"]: r["count"] for r in rows}


def test_offset_json_bounds_and_task_splitting(spark, kafka, codec_topics):
    topic = codec_topics["lz4"]
    # The Java producer's sticky partitioner fills partitions unevenly: take bounds from what is there.
    sizes = partition_sizes(spark, kafka, topic)
    big = max(sizes, key=sizes.get)
    others = sorted(set(range(3)) - {big})
    bounds = {"startingOffsets": f'{{"{topic}":{{"{big}":10,"{others[0]}":-2,"{others[1]}":0}}}}',
              "endingOffsets": f'{{"{topic}":{{"{big}":{sizes[big] - 5},"{others[0]}":-1,"{others[1]}":0}}}}'}
    ours, theirs = read_both(spark, kafka, subscribe=topic, **bounds)
    assert ours.count() == sizes[big] - 15 + sizes.get(others[0], 0)
    assert_df_equality(ours, theirs, ignore_row_order=True)
    split, _ = read_both(spark, kafka, subscribe=topic, minPartitions="7", **bounds)
    assert split.rdd.getNumPartitions() >= 6
    assert_df_equality(split, theirs, ignore_row_order=True)
    capped, _ = read_both(spark, kafka, subscribe=topic, maxRecordsPerPartition="100", **bounds)
    assert capped.rdd.getNumPartitions() >= (sizes[big] - 15) // 100
    assert_df_equality(capped, theirs, ignore_row_order=True)


def test_headers_null_keys_and_null_values(spark, kafka, topic_name):
    kafka.create_topic(topic_name, partitions=2)
    lines = ([f"h{i}:x{i},h2:{i}\tk{i}\tv{i}" for i in range(20)] + [f"h:1\tnull\tnokey{i}" for i in range(5)]
             + [f"h:null\tk{i}\tnull" for i in range(4)] + ["h:2\tnull\tnull"])
    kafka.tools.run("console-producer", "--topic", topic_name, "--property", "parse.headers=true",
                    "--property", "parse.key=true", "--property", "null.marker=null", input="\n".join(lines) + "\n")
    ours, theirs = read_both(spark, kafka, subscribe=topic_name, includeHeaders="true")
    assert ours.where("key is null").count() == 6
    assert ours.where("value is null").count() == 5
    assert ours.where("headers[0].value is null").count() == 4
    assert_df_equality(ours, theirs, ignore_row_order=True)


def test_subscribe_pattern_and_assign(spark, kafka, codec_topics):
    ours, theirs = read_both(spark, kafka, subscribePattern="pykafka-batch-(gzip|zstd)")
    assert ours.select("topic").distinct().count() == 2
    assert_df_equality(ours, theirs, ignore_row_order=True)
    # Spark finds the pattern anywhere in the name (a regex search), so an unanchored infix selects topics.
    ours, theirs = read_both(spark, kafka, subscribePattern="batch-(gzip|zstd)")
    assert sorted(r[0] for r in ours.select("topic").distinct().collect()) == [
        codec_topics["gzip"], codec_topics["zstd"]]
    assert_df_equality(ours, theirs, ignore_row_order=True)
    topic = codec_topics["none"]
    filled = sorted(p for p, n in partition_sizes(spark, kafka, topic).items() if n)
    assign = f'{{"{topic}":[{filled[0]}]}}'
    ours, theirs = read_both(spark, kafka, assign=assign)
    assert [r[0] for r in ours.select("partition").distinct().collect()] == [filled[0]]
    assert_df_equality(ours, theirs, ignore_row_order=True)
    empty = [p for p in range(3) if p not in filled]
    if empty:
        ours, theirs = read_both(spark, kafka, assign=f'{{"{topic}":[{empty[0]}]}}')
        assert ours.count() == 0 and theirs.count() == 0


def test_timestamp_bounds(spark, kafka, codec_topics):
    topic = codec_topics["snappy"]
    latest = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
              .load().groupBy("partition").agg({"timestamp": "max"}).selectExpr("unix_millis(`max(timestamp)`)")
              .collect())
    # Every non-empty partition holds a record at or after the earliest of the partitions' last
    # timestamps; where one finds none, both sources fail by default (see the per-partition tests).
    cut = min(r[0] for r in latest)
    no_match = {} if len(latest) == 3 else {"startingOffsetsByTimestampStrategy": "latest"}
    ours, theirs = read_both(spark, kafka, subscribe=topic, startingTimestamp=str(cut), **no_match)
    assert 0 < ours.count() <= 3000
    assert_df_equality(ours, theirs, ignore_row_order=True)
    ours, theirs = read_both(spark, kafka, subscribe=topic, endingTimestamp=str(cut))
    assert_df_equality(ours, theirs, ignore_row_order=True)


def test_bad_options_fail_at_load_naming_the_option(spark, kafka):
    with pytest.raises(Exception, match="did you mean 'startingOffsets'"):
        spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap) \
            .option("subscribe", "t").option("startingOffset", "earliest").load()
    # Spark asks a Python source for its schema the same way for read and readStream, so the checks that
    # depend on the mode run when the query is planned: the first action of a batch read.
    df = spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap) \
        .option("subscribe", "t").option("startingOffsets", "latest").load()
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries"):
        df.count()
    query = spark.readStream.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap) \
        .option("subscribe", "t").option("endingOffsets", "latest").load().writeStream.format("noop").start()
    try:
        with pytest.raises(Exception, match="ending offset not valid in streaming queries"):
            query.awaitTermination(120)
    finally:
        query.stop()


@pytest.mark.parametrize(("module", "source"), [("pyspark_kafka_spark", "pykafka"),
                                                ("pyspark_kafka_spark_log", "pykafka-log")])
def test_registration_module_imports_without_optional_extras(module, source):
    # Spark silently skips a pyspark_* module that fails to import, which would hide the source; the
    # record decoder and the segment reader load in tasks only.
    code = (
        "import sys\n"
        "for name in ('kazoo', 'deltalake', 'msgspec', 'delta', 'lz4', 'zstandard', 'snappy', 'crcmod', 'kafka'):\n"
        "    sys.modules[name] = None\n"
        f"import {module}\n"
        "from pkgutil import iter_modules\n"
        f"assert '{module}' in {{m.name for m in iter_modules()}}\n"
        f"print({module}.DefaultSource.name())\n"
        "print(sorted(m for m in ('kafka_spark.segments', 'kafka_spark.records.decoder') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [source, "[]"]
