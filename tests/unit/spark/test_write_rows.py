"""`produce_rows`, the Spark-free core of a `pykafka` write: one `send_many` per Arrow batch with Spark's sink
conversions (strings as UTF-8, headers as pairs, the topic option over the column), Spark's null-topic message,
and the first delivery error failing the task."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from kafka_spark.client import ProducerError
from kafka_spark.errors import ConfigError
from kafka_spark.spark.sink import rows as write_rows
from kafka_spark.spark.sink.rows import produce_rows

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


class Sent:
    def __init__(self, count: int, error: BaseException | None = None, done: bool = True) -> None:
        self.count, self.error, self.done = count, error, done

    def get(self, timeout: float | None = None) -> int:
        if self.error is not None:
            raise self.error
        return self.count


def _python(column: Any) -> Any:
    if not isinstance(column, pa.Array):
        return column
    return (column.cast(pa.binary()) if pa.types.is_string(column.type) else column).to_pylist()


class StubProducer:
    def __init__(self, errors: dict[int, BaseException] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.errors = errors or {}
        self.flushed = False

    def send_many(self, topic, values, keys=None, partitions=None, headers=None) -> Sent:
        # the sink hands Arrow columns over: recorded as the Python values the producer sends (strings as UTF-8)
        self.calls.append({"topic": topic, "values": _python(values), "keys": _python(keys),
                           "partitions": _python(partitions), "headers": headers})
        return Sent(len(values), self.errors.get(len(self.calls) - 1))

    def flush(self) -> None:
        self.flushed = True


def test_each_batch_is_one_call_with_spark_sink_conversions() -> None:
    batch = pa.RecordBatch.from_pydict({
        "topic": pa.array(["a", "b"]), "key": pa.array(["ké", None]), "value": pa.array([b"v1", None], pa.binary()),
        "partition": pa.array([3, None], pa.int32()),
        "headers": pa.array([[{"key": "h", "value": b"x"}, {"key": "n", "value": None}], []], HEADERS),
    })
    producer = StubProducer()
    assert produce_rows(producer, [batch, batch.slice(0, 0), batch.slice(1)], None) == 3
    assert producer.flushed and len(producer.calls) == 2
    assert producer.calls[0] == {"topic": ["a", "b"], "values": [b"v1", None], "keys": ["ké".encode(), None],
                                 "partitions": [3, None], "headers": [[("h", b"x"), ("n", None)], None]}
    only_value = pa.RecordBatch.from_pydict({"topic": pa.array(["a"]), "value": pa.array(["text"])})
    produce_rows(producer, [only_value], "option-topic")
    assert producer.calls[-1] == {"topic": "option-topic", "values": [b"text"], "keys": None, "partitions": None,
                                  "headers": None}
    # no row with a header: no headers handed over (the producer then encodes from the columns), and one topic
    # name when every row has it
    no_headers = pa.RecordBatch.from_pydict({"topic": pa.array(["a", "a"]), "value": pa.array([b"1", b"2"]),
                                             "headers": pa.array([[], None], HEADERS)})
    produce_rows(producer, [no_headers], None)
    assert producer.calls[-1]["headers"] is None and producer.calls[-1]["topic"] == "a"


def test_a_null_topic_fails_with_spark_sink_message() -> None:
    batch = pa.RecordBatch.from_pydict({"topic": pa.array(["a", None]), "value": pa.array([b"1", b"2"])})
    with pytest.raises(ConfigError, match=r"contains a null topic\. Use the `topic` option for setting a default"):
        produce_rows(StubProducer(), [batch], None)
    produce_rows(StubProducer(), [batch], "t")  # the option covers the null


def test_the_first_delivery_error_fails_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = pa.RecordBatch.from_pydict({"value": pa.array([b"1", b"2"])})
    failure = ProducerError("MESSAGE_TOO_LARGE from the broker")
    with pytest.raises(ProducerError, match="MESSAGE_TOO_LARGE"):
        produce_rows(StubProducer({1: failure, 2: ProducerError("later")}), [batch] * 4, "t")
    # pruning (every _PRUNE_EVERY rows) raises a delivered failure before the rest of the task is sent
    monkeypatch.setattr(write_rows, "_PRUNE_EVERY", 4)
    producer = StubProducer({0: failure})
    with pytest.raises(ProducerError, match="MESSAGE_TOO_LARGE"):
        produce_rows(producer, [batch] * 10, "t")
    assert len(producer.calls) == 2 and not producer.flushed
