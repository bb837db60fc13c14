"""`format("pykafka-log")` on a live broker's log dir while a producer keeps writing and retention deletes
segments: the end is fixed at planning, a range read equals the records produced (and pykafka's read of
it), and segments deleted between planning and reading are data loss (an error naming the partition and
offsets under failOnDataLoss, else skipped), never a duplicate or a wrong row.

Each record's value names its own offset (one producer, one partition), so any row can be checked alone.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from log_source_compare import assert_same_rows, load, rows

from kafka_spark.client.producer.producer import Producer
from kafka_spark.errors import DataLossError
from kafka_spark.local.kafka import KafkaNode
from kafka_spark.segments import PartitionLog
from kafka_spark.spark.log.options import parse_log_options
from kafka_spark.spark.log.source import KafkaLogBatchReader

# Roll a segment every 200 ms; retention starts when a test turns it on (`_retain_for`).
LIVE = {"segment.ms": "200", "retention.ms": "600000", "file.delete.delay.ms": "500"}


def _value(offset: int) -> bytes:
    return f"{offset:012d}".encode() + b"x" * 88


class _Writer(threading.Thread):
    """Writes records to partition 0 until stopped; each value holds the offset the record gets."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5}) as producer:
                offset = 0
                while not self.stop_event.is_set():
                    futures = [producer.send(self.topic, _value(offset + i), partition=0) for i in range(50)]
                    acked = [f.get(30).offset for f in futures]
                    assert acked == list(range(offset, offset + 50)), acked[:3]
                    offset += 50
                    time.sleep(0.1)
        except BaseException as exc:  # surfaced by the test
            self.error = exc


@pytest.fixture
def live(log_broker: KafkaNode) -> Iterator[tuple[str, _Writer]]:
    topic = f"lsrc-live-{uuid.uuid4().hex[:8]}"
    log_broker.create_topic(topic, configs=LIVE)
    writer = _Writer(log_broker.bootstrap, topic)
    writer.start()
    yield topic, writer
    writer.stop_event.set()
    writer.join(30)
    assert writer.error is None, writer.error


def _retain(log_broker: KafkaNode, topic: str, setting: str) -> None:
    """Set a retention config of the topic on the running broker (it checks every 500 ms)."""
    log_broker.tools.run("configs", "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config",
                         setting)


def _log_start(log_broker: KafkaNode, topic: str) -> int:
    try:
        with PartitionLog.open(str(log_broker.log_dir / f"{topic}-0")) as plog:
            return plog.log_start_offset
    except FileNotFoundError:  # the broker has not created the partition yet
        return -1


def _wait_log_start_past(log_broker: KafkaNode, topic: str, offset: int, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while (start := _log_start(log_broker, topic)) <= offset:
        assert time.monotonic() < deadline, f"retention did not delete {topic}'s offset {offset} in {timeout} s"
        time.sleep(0.2)
    return start


def _check(rs: list) -> None:
    for r in rs:
        assert bytes(r["value"]) == _value(r["offset"]), r


def test_live_log_dir_while_producing_and_deleting(spark, log_broker: KafkaNode, live) -> None:
    topic, _ = live
    path = str(log_broker.log_dir)
    while _log_start(log_broker, topic) < 0:
        time.sleep(0.2)
    time.sleep(2)

    # A recent range, fixed by offsets: the files give exactly the records produced, as the broker does.
    with PartitionLog.open(f"{path}/{topic}-0") as plog:
        hi = plog.high_watermark
    lo = max(hi - 200, 0)
    bounds = {"startingOffsets": f'{{"{topic}":{{"0":{lo}}}}}', "endingOffsets": f'{{"{topic}":{{"0":{hi}}}}}'}
    got = assert_same_rows(spark, path, log_broker.bootstrap, ("pykafka-log", "pykafka"), subscribe=topic, **bounds)
    assert [r["offset"] for r in got] == list(range(lo, hi))
    _check(got)

    # Everything the files hold, from earliest to the end fixed at planning, while retention deletes:
    # offsets that vanished are skipped, never a wrong or repeated row.
    _retain(log_broker, topic, "retention.ms=1000")
    _wait_log_start_past(log_broker, topic, 0)
    everything = rows(load(spark, "pykafka-log", path, "", {"subscribe": topic, "failOnDataLoss": "false"}))
    offsets = [r["offset"] for r in everything]
    assert offsets == sorted(set(offsets)) and offsets
    assert offsets == list(range(offsets[0], offsets[-1] + 1))
    _check(everything)


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_segments_deleted_between_planning_and_reading(log_broker: KafkaNode, live,
                                                       fail_on_data_loss: bool) -> None:
    topic, writer = live
    while _log_start(log_broker, topic) < 0:
        time.sleep(0.2)
    time.sleep(3)
    # The writer stops so that retention by size settles at a known point inside the planned range.
    writer.stop_event.set()
    writer.join(30)
    options = parse_log_options({"path": str(log_broker.log_dir), "subscribe": topic,
                                 "failOnDataLoss": str(fail_on_data_loss).lower(), "bytesPerTask": "1"})
    reader = KafkaLogBatchReader(options)
    tasks = reader.partitions()  # the driver's plan: one task per segment
    first, end = tasks[0].range, tasks[-1].range.end
    assert len(tasks) > 4 and first.start == 0
    _retain(log_broker, topic, "retention.bytes=60000")
    new_start = _wait_log_start_past(log_broker, topic, first.end)
    assert new_start < end
    if fail_on_data_loss:
        with pytest.raises(DataLossError, match=rf"offset \[{first.start}, {first.end}\) for topic partition "
                                                rf"{topic}-0"):
            list(reader.read(tasks[0]))
        return
    assert list(reader.read(tasks[0])) == []
    got = [r for t in tasks for b in reader.read(t) for r in b.to_pylist()]
    assert [r["offset"] for r in got] == list(range(new_start, end))
    _check(got)
