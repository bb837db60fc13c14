"""`Producer.send_many` against a loop of `send()`, on a scripted broker: the same partitions and batches, the same
errors, and back-pressure when the queue holds `buffer_memory`."""

from __future__ import annotations

import random
import threading
import time
import uuid
from typing import Any

import pyarrow as pa
import pytest
from client_fake_broker import TOPIC_ID, FakeBroker

from kafka_spark.client import Producer, ProducerError
from kafka_spark.client.producer.partitioner import partition_for_key
from kafka_spark.protocol import ApiKey
from kafka_spark.records import iter_records

PARTITIONS = 8
NEVER = 600_000  # linger.ms: only full batches and flush() seal, so both runs seal at the same records
IDS = {"t": TOPIC_ID, "u": uuid.UUID(int=0x5678)}
EXACT = 61 + 5 * 121


class RecordingBroker(FakeBroker):
    """Two topics of PARTITIONS partitions; acknowledges every Produce, keeping each partition's batches as
    lists of (key, value, headers)."""

    def __init__(self, **kwargs: Any) -> None:
        self.batches: dict[tuple[str, int], list[list[tuple]]] = {}
        self.gate = threading.Event()
        self.gate.set()
        super().__init__(self._produce, partitions=PARTITIONS, **kwargs)

    def metadata(self) -> dict[str, Any]:
        body = super().metadata()
        other = {**body["topics"][0], "name": "u", "topic_id": IDS["u"]}
        body["topics"] = [body["topics"][0], other]
        return body

    def _produce(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        assert api_key == ApiKey.PRODUCE
        self.gate.wait()
        responses = []
        for topic in body["topic_data"]:
            name = topic.get("name") or next(n for n, i in IDS.items() if i == topic["topic_id"])
            answers = []
            for part in topic["partition_data"]:
                kept = self.batches.setdefault((name, part["index"]), [])
                base = sum(len(b) for b in kept)
                kept.append([(r.key, r.value, tuple(r.headers)) for r in iter_records(part["records"])])
                answers.append({"index": part["index"], "error_code": 0, "base_offset": base})
            responses.append({"name": name, "topic_id": IDS[name], "partition_responses": answers})
        return {"responses": responses, "throttle_time_ms": 0}


def _producer(broker: FakeBroker, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": NEVER, "retry.backoff.ms": 5,
                     "request.timeout.ms": 5000, **extra})


def _columns(seed: int, n: int, keys: str, partitions: bool, headers: bool, batch_size: int) -> dict[str, Any]:
    rng = random.Random(seed)
    values = [None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 10, 100, 700])) for _ in range(n)]
    if batch_size == EXACT:
        values = [b"x" * 100] * n  # 121 bytes a record with no key: five of them fill a batch to the byte
    columns: dict[str, Any] = {"values": values}
    if keys != "none":
        chance = {"all": 0.0, "mixed": 0.4}[keys]
        columns["keys"] = [None if rng.random() < chance else b"k%d" % rng.randrange(50) for _ in range(n)]
    if partitions:
        columns["partitions"] = [rng.randrange(PARTITIONS) if rng.random() < 0.3 else None for _ in range(n)]
    if headers:
        columns["headers"] = [[("h", rng.randbytes(5)), ("n", None)] if rng.random() < 0.5 else None
                              for _ in range(n)]
    return columns


def _by_loop(producer: Producer, topics: list[str], columns: dict[str, Any]) -> list:
    n = len(columns["values"])
    return [producer.send(topics[i], columns["values"][i], key=columns.get("keys", [None] * n)[i],
                          partition=columns.get("partitions", [None] * n)[i],
                          headers=columns.get("headers", [None] * n)[i] or ()) for i in range(n)]


def _by_calls(producer: Producer, topics: list[str], columns: dict[str, Any], calls: int,
              arrow: bool = False) -> list:
    n = len(columns["values"])
    cuts = sorted(random.Random(n).sample(range(1, n), calls - 1)) if calls > 1 else []
    futures = []
    for start, end in zip([0, *cuts], [*cuts, n], strict=True):
        part = {name: column[start:end] for name, column in columns.items()}
        if arrow:  # Arrow columns (sliced, as the sink's batches may be); headers stay Python lists
            for name, kind in (("values", pa.binary()), ("keys", pa.binary()), ("partitions", pa.int32())):
                if name in columns:
                    part[name] = pa.array(columns[name], kind).slice(start, end - start)
        topic = topics[start] if len(set(topics)) == 1 else topics[start:end]
        futures += producer.send_many(topic, **part).futures()
    return futures


CASES = [
    # keys, explicit partitions, headers, batch.size, topics (one; two alternating at random; runs of 1-40 each)
    ("all", False, False, 16384, "one"),
    ("all", False, True, 700, "one"),
    ("none", False, False, 900, "one"),
    ("none", False, False, 0, "one"),
    ("mixed", False, False, 900, "one"),
    ("mixed", True, True, 900, "two"),
    ("all", True, False, 1200, "two"),
    ("all", False, False, 900, "blocks"),
    ("none", False, False, 900, "blocks"),
    ("mixed", True, False, 900, "blocks"),
    ("none", True, False, 16384, "one"),
    ("none", False, False, EXACT, "one"),
    ("none", True, False, EXACT, "one"),
]


@pytest.mark.parametrize(("keys", "partitions", "headers", "batch_size", "topics"), CASES)
def test_send_many_makes_the_batches_a_send_loop_makes(keys: str, partitions: bool, headers: bool, batch_size: int,
                                                       topics: str) -> None:
    columns = _columns(7, 1500, keys, partitions, headers, batch_size)
    rng = random.Random(3)
    names = {"one": ["t"] * 1500, "two": [rng.choice("tu") for _ in range(1500)],
             "blocks": [name for i in range(100) for name in "tu"[i % 2] * rng.randint(1, 40)][:1500]}[topics]
    results = []
    for send in (_by_loop, lambda p, t, c: _by_calls(p, t, c, 4), lambda p, t, c: _by_calls(p, t, c, 4, True)):
        with RecordingBroker() as broker, _producer(broker, **{"batch.size": batch_size}) as producer:
            random.seed(11)  # the sticky partitioner's choices
            futures = send(producer, names, columns)
            producer.flush()
            metadata = [f.get(5) for f in futures]
            results.append((broker.batches, [(m.topic, m.partition, m.offset) for m in metadata]))
    (loop_batches, loop_places), (bulk_batches, bulk_places), (arrow_batches, arrow_places) = results
    assert bulk_places == loop_places
    assert bulk_batches == loop_batches
    assert arrow_places == loop_places
    assert arrow_batches == loop_batches
    if keys == "all" and not partitions:
        keys = columns["keys"]
        assert all(p == partition_for_key(k, PARTITIONS) for (_, p, _), k in zip(bulk_places, keys, strict=True))


def test_errors_are_those_of_the_first_bad_record_and_nothing_is_queued() -> None:
    with RecordingBroker() as broker, _producer(broker, **{"max.request.size": 2000}) as producer:
        values = [b"v"] * 10
        cases = [
            ({"partitions": [None] * 5 + [PARTITIONS] + [None] * 4}, r"t has partitions 0\.\.7, not 8"),
            ({"partitions": [None] * 5 + [-1] + [None] * 4}, r"t has partitions 0\.\.7, not -1"),
            ({"values": [b"v"] * 3 + [b"x" * 5000] + [b"v"] * 6, "partitions": [None] * 6 + [99] * 4},
             r"a record of about 5021 bytes exceeds max\.request\.size=2000"),
            ({"values": [b"v"] * 8 + [b"x" * 5000] * 2, "partitions": [None] * 6 + [99] * 4},
             r"t has partitions 0\.\.7, not 99"),
        ]
        for change, message in cases:
            columns = {"values": values, **change}
            with pytest.raises(ProducerError, match=message) as bulk:
                producer.send_many("t", **columns)
            assert producer._unsent == 0 and producer._buffered == 0
            arrow = {"values": pa.array(columns["values"], pa.binary()),
                     "partitions": pa.array(columns["partitions"], pa.int32())}
            with pytest.raises(ProducerError, match=message):  # Arrow columns: the same error, nothing queued
                producer.send_many("t", **arrow)
            assert producer._unsent == 0 and producer._buffered == 0
            with pytest.raises(ProducerError) as loop:
                _by_loop(producer, ["t"] * 10, columns)
            assert str(bulk.value) == str(loop.value)
            producer.flush()
        with pytest.raises(ValueError, match="keys has 2 entries for 10 values"):
            producer.send_many("t", values, keys=[b"a", b"b"])
        assert producer.send_many("t", []).get() == 0
        assert producer.send_many("t", pa.array([], pa.binary())).get() == 0
        with pytest.raises(ValueError, match="keys has 2 entries for 10 values"):
            producer.send_many("t", pa.array(values), keys=pa.array([b"a", b"b"]))
    with pytest.raises(ProducerError, match="the producer is closed"):
        producer.send_many("t", values)


def test_a_full_buffer_holds_send_many_and_send_until_deliveries_free_it() -> None:
    with RecordingBroker() as broker, _producer(broker, **{"batch.size": 1000, "linger.ms": 0,
                                                           "buffer.memory": 5000}) as producer:
        assert producer.buffer_memory == 5000
        broker.gate.clear()  # the broker holds every Produce response: nothing is delivered
        first = producer.send_many("t", [b"x" * 100] * 40, keys=[b"k%d" % i for i in range(40)])
        assert producer._buffered > producer.buffer_memory  # one call bigger than the buffer goes when it is empty
        done: dict[str, Any] = {}
        waiters = [threading.Thread(target=lambda: done.update(many=producer.send_many("t", [b"y" * 100] * 5))),
                   threading.Thread(target=lambda: done.update(one=producer.send("t", b"z")))]
        for waiter in waiters:
            waiter.start()
        time.sleep(0.5)
        assert not done and all(w.is_alive() for w in waiters)
        broker.gate.set()
        for waiter in waiters:
            waiter.join(10)
        assert len(done) == 2
        producer.flush()
        assert first.get(5) == 40 and done["many"].get(5) == 5 and done["one"].get(5).offset >= 0
        assert producer._buffered == 0


@pytest.mark.parametrize(("held", "batches"), [(0.15, [5, 5, 1]), (1.0, [5, 2, 4])])
def test_a_call_waiting_for_room_tops_up_the_open_batch_unless_room_is_long_in_coming(
        held: float, batches: list[int]) -> None:
    # 121 bytes a record, five to a batch: the first call leaves a full batch (held by the broker) and an open
    # one of two records; the second waits for room past linger.ms, then completes the open batch. Held past
    # half a second, the open batch goes on its own, as the sealed ones are not coming back soon.
    done: list[Any] = []
    with RecordingBroker() as broker, _producer(broker, **{"batch.size": EXACT, "linger.ms": 20,
                                                           "buffer.memory": 8 * 121}) as producer:
        broker.gate.clear()
        first = producer.send_many("t", [b"x" * 100] * 7, partitions=[3] * 7)
        waiter = threading.Thread(target=lambda: done.append(
            producer.send_many("t", [b"y" * 100] * 4, partitions=[3] * 4)))
        waiter.start()
        time.sleep(held)
        assert waiter.is_alive() and not done
        broker.gate.set()
        waiter.join(10)
        producer.flush()
        assert first.get(5) == 7 and done[0].get(5) == 4
        assert [len(b) for b in broker.batches[("t", 3)]] == batches


def _arrival(broker: RecordingBroker, partition: int, since: float, batches: int = 1, timeout: float = 5) -> float:
    """Seconds from `since` until the broker holds `batches` batches of `partition`."""
    deadline = time.monotonic() + timeout
    while len(broker.batches.get(("t", partition), [])) < batches and time.monotonic() < deadline:
        time.sleep(0.005)
    return time.monotonic() - since


def test_records_added_to_an_open_batch_go_at_linger_ms_of_its_first() -> None:
    # The second call only tops up the batch the first opened (the sender is not woken for it): the batch still
    # goes linger.ms after it opened, with both calls' records, and without flush().
    with RecordingBroker() as broker, _producer(broker, **{"batch.size": 100_000, "linger.ms": 300}) as producer:
        opened = time.monotonic()
        first = producer.send_many("t", [b"x" * 100] * 2, partitions=[3] * 2)
        time.sleep(0.1)
        second = producer.send_many("t", [b"y" * 100] * 2, partitions=[3] * 2)
        waited = _arrival(broker, 3, opened)
        assert 0.29 <= waited < 3
        assert first.get(5) == 2 and second.get(5) == 2
        assert [len(b) for b in broker.batches[("t", 3)]] == [4]


def test_an_open_batch_topped_up_after_a_wait_for_room_goes_as_soon_as_it_is_past_linger_ms() -> None:
    # While a caller waits for room, the sender leaves the open batches open; once the caller has added its
    # records (to the open batch, which stays open), the batch is long past linger.ms and goes at once, not
    # after the sender's idle wait (half a second).
    with RecordingBroker() as broker, _producer(broker, **{"batch.size": EXACT, "linger.ms": 20,
                                                           "buffer.memory": 8 * 121}) as producer:
        broker.gate.clear()
        first = producer.send_many("t", [b"x" * 100] * 7, partitions=[3] * 7)  # a full batch held, 2 open
        done: list[Any] = []
        waiter = threading.Thread(target=lambda: done.append(
            producer.send_many("t", [b"y" * 100] * 2, partitions=[3] * 2)))
        waiter.start()
        time.sleep(0.15)
        assert waiter.is_alive()
        opened = time.monotonic()
        broker.gate.set()
        waiter.join(10)
        assert _arrival(broker, 3, opened, batches=2) < 0.4, "the topped-up batch waited for the sender's idle wait"
        assert first.get(5) == 7 and done[0].get(5) == 2
        assert [len(b) for b in broker.batches[("t", 3)]] == [5, 4]


def test_a_call_waiting_on_open_batches_alone_seals_them() -> None:
    # Nothing sealed can free room (linger.ms never ends, the batch is far from full): the wait sends them.
    with RecordingBroker() as broker, _producer(broker, **{"batch.size": 100_000, "buffer.memory": 1000}) as producer:
        first = producer.send_many("t", [b"x" * 100] * 9, partitions=[3] * 9)
        second = producer.send_many("t", [b"y" * 100] * 2, partitions=[3] * 2)
        producer.flush()
        assert first.get(5) == 9 and second.get(5) == 2
        assert [len(b) for b in broker.batches[("t", 3)]] == [9, 2]


def test_a_full_buffer_fails_the_send_after_max_block_ms() -> None:
    with RecordingBroker() as broker, _producer(broker, **{"batch.size": 1000, "linger.ms": 0, "buffer.memory": 5000,
                                                           "max.block.ms": 300}) as producer:
        broker.gate.clear()
        first = producer.send_many("t", [b"x" * 100] * 40)
        started = time.monotonic()
        with pytest.raises(ProducerError, match=r"no room for \d+ bytes of records within max.block.ms=300: "
                                                r"\d+ of buffer.memory=5000 bytes are queued and undelivered"):
            producer.send("t", b"z")
        assert 0.25 <= time.monotonic() - started < 3
        broker.gate.set()
        producer.flush()
        assert first.get(5) == 40


def test_the_metadata_wait_of_send_ends_at_max_block_ms() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Producer({"bootstrap.servers": f"127.0.0.1:{port}", "max.block.ms": 500, "default.api.timeout.ms": 60000,
                   "retry.backoff.ms": 20, "reconnect.backoff.ms": 20}) as producer:
        started = time.monotonic()
        with pytest.raises(Exception, match="Connection refused"):
            producer.send("t", b"v")
        assert time.monotonic() - started < 5, "send() must give up at max.block.ms, not default.api.timeout.ms"


@pytest.mark.parametrize("headers", [None, [[("h", b"x")], None, []]])
def test_arrow_string_and_null_type_columns_go_out_as_utf8_bytes(headers: list | None) -> None:
    values = pa.array(["é", None, "plain"], pa.string())
    for keys, expected_keys in ((pa.array(["k1", "ké", None], pa.large_string()), [b"k1", "ké".encode(), None]),
                                (pa.nulls(3), [None, None, None])):
        with RecordingBroker() as broker, _producer(broker) as producer:
            sent = producer.send_many("t", values, keys=keys, partitions=pa.array([1, 1, 1], pa.int8()),
                                      headers=headers)
            producer.flush()
            sent.get(5)
            assert broker.batches[("t", 1)] == [[(expected_keys[0], "é".encode(), (("h", b"x"),) if headers else ()),
                                                 (expected_keys[1], None, ()),
                                                 (expected_keys[2], b"plain", ())]]
    with RecordingBroker() as broker, _producer(broker) as producer, pytest.raises(TypeError, match="int64"):
        producer.send_many("t", pa.array([1, 2]))
