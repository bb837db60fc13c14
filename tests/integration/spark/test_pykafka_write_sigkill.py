"""A Kafka -> Kafka stream written with format("pykafka") exactlyOnce=true, its driver SIGKILLed at random moments
while records keep arriving: a read_committed reader sees every input record exactly once.

KAFKA_SPARK_KILLS sets the number of kills (1 in the suite, 10 for the full schedule). KAFKA_SPARK_SPARK_SINK_KILLS=1
runs the same kill schedule with Spark's format("kafka") sink and prints its duplicate count (it is at-least-once).
"""

from __future__ import annotations

import collections
import os
import random
import sys
from pathlib import Path

import pytest

from kafka_spark.client import KafkaClient, Producer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "delta"))
from delta_support import keep_producing, latest_offsets_of, produce_numbered, run_killable

KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "1"))
DRIVER = Path(__file__).parent / "kafka_to_kafka_once.py"
SINKS = ["pykafka", pytest.param("kafka", marks=pytest.mark.skipif(
    not os.environ.get("KAFKA_SPARK_SPARK_SINK_KILLS"), reason="set KAFKA_SPARK_SPARK_SINK_KILLS=1 to count the "
                                                               "duplicates of Spark's own sink"))]


def committed_counts(bootstrap: str, topic: str) -> collections.Counter[bytes]:
    """How often each value is in `topic` for a read_committed reader (our fetcher)."""
    counts: collections.Counter[bytes] = collections.Counter()
    with KafkaClient({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as client:
        tps = client.partitions(topic)
        ends = client.latest_offsets(tps)
        for tp in tps:
            for batch in client.fetch(topic, tp.partition, 0, ends[tp]):
                counts.update(batch.column("value").to_pylist())
    return counts


@pytest.mark.timeout(1800)  # ten driver start-ups in the long schedule: well over the default on 2 loaded cores
@pytest.mark.parametrize("sink", SINKS)
def test_sigkilled_kafka_to_kafka_stream_writes_every_record_once(kafka, topic_name, tmp_path, sink):
    source, target = f"{topic_name}-in", f"{topic_name}-out"
    kafka.create_topic(source, partitions=3)
    kafka.create_topic(target, partitions=3)
    checkpoint = str(tmp_path / "checkpoint")
    rng = random.Random(20261123)
    runs = []
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5}) as producer:
        produce_numbered(producer, source, 1000)
        with keep_producing(producer, source, start=1000, step=20):
            while sum(1 for _, code in runs if code != 0) < KILLS and len(runs) < KILLS + 5:
                # after the run's first micro-batch, so that each run moves the stream on before it dies
                kill_after = rng.uniform(0.5, 6.0)
                code, _ = run_killable(DRIVER, kafka.bootstrap, source, target, checkpoint, sink, "1",
                                       kill_after=kill_after, ready="progress")
                runs.append((f"kill@{kill_after:.1f}s", code))
    total = sum(latest_offsets_of(kafka.bootstrap, source).values())
    assert sum(1 for _, code in runs if code != 0) >= KILLS, runs
    code, out = run_killable(DRIVER, kafka.bootstrap, source, target, checkpoint, sink, "available-now")
    assert code == 0, out
    counts = committed_counts(kafka.bootstrap, target)
    expected = {f'{{"n":{n}}}'.encode() for n in range(total)}
    assert set(counts) == expected, (len(set(counts)), len(expected))
    duplicates = sum(c - 1 for c in counts.values())
    print(f"{sink}: {len(runs)} runs, {KILLS} kills, {total} input records, {duplicates} duplicates", flush=True)
    if sink == "pykafka":
        assert duplicates == 0, collections.Counter(counts.values())
