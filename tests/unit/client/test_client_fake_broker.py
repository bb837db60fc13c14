"""Connection and fetch behaviour under faults, against a scripted broker."""

from __future__ import annotations

import time

import pytest
from client_fake_broker import CLOSE, FakeBroker, fetch_response

from kafka_spark.client import Cluster, KafkaClient
from kafka_spark.client.errors import RetriesExhaustedError
from kafka_spark.client.net.connection import BrokerConnection
from kafka_spark.protocol import ApiKey
from kafka_spark.records import encode_batch

NOT_LEADER = 6


def _config(broker: FakeBroker, **extra):
    return {"bootstrap.servers": broker.bootstrap, "retry.backoff.ms": 5, "retry.backoff.max.ms": 20,
            "request.timeout.ms": 5000, **extra}


def _batch(base: int, deltas: list[int]) -> bytes:
    return encode_batch([(b"k%d" % (base + d), b"v%d" % (base + d), (), 1_700_000_000_000) for d in deltas],
                        base_offset=base, offset_deltas=deltas)


def test_pipelined_requests_are_matched_by_correlation_id():
    with FakeBroker(lambda *a: None) as broker:
        conn = BrokerConnection("127.0.0.1", broker.port, Cluster(_config(broker)).config).connect()
        handles = [conn.send(ApiKey.METADATA, {"topics": None}) for _ in range(3)]
        assert conn.in_flight == 3
        for handle in reversed(handles):
            assert conn.receive(handle)["cluster_id"] == "fake"
        assert len({h.correlation_id for h in handles}) == 3
        conn.close()


def test_fetch_retries_not_leader_and_crosses_compaction_gaps():
    calls = []

    def handler(api_key, version, body):
        offset = body["topics"][0]["partitions"][0]["fetch_offset"]
        calls.append(offset)
        if len(calls) == 1:
            return fetch_response(0, None, error_code=NOT_LEADER)
        if offset == 0:
            # compacted: offsets 0, 3, 4 remain of 0..4
            return fetch_response(0, _batch(0, [0, 3, 4]), high_watermark=10)
        if offset == 5:
            return fetch_response(0, _batch(5, [2, 4]), high_watermark=10)  # 7 and 9
        raise AssertionError(f"unexpected fetch at {offset}")

    with FakeBroker(handler) as broker, KafkaClient(_config(broker)) as client:
        reader = client.fetch("t", 0, 0, 10)
        table = reader.read_all()
        assert table.column("offset").to_pylist() == [0, 3, 4, 7, 9]
        assert table.column("value").to_pylist() == [b"v0", b"v3", b"v4", b"v7", b"v9"]
        assert reader.stats.retries == 1 and calls == [0, 0, 5]


def test_a_batch_cut_off_by_an_old_fetch_version_is_fetched_whole():
    big = _batch(0, [0]) + _batch(1, list(range(200)))

    def handler(api_key, version, body):
        part = body["topics"][0]["partitions"][0]
        offset, limit = part["fetch_offset"], part["partition_max_bytes"]
        data = _batch(0, [0]) + _batch(1, list(range(200))) if offset == 0 else big[len(_batch(0, [0])):]
        return fetch_response(0, data[:limit], high_watermark=201)

    with FakeBroker(handler, max_versions={ApiKey.FETCH: 2}) as broker, \
            KafkaClient(_config(broker, **{"max.partition.fetch.bytes": 200})) as client:
        table = client.fetch("t", 0, 0, 201).read_all()
        assert table.column("offset").to_pylist() == list(range(201))
        assert broker.requests[-1][1] == 2


def test_throttling_delays_the_next_request():
    # Timed at the broker, from the throttled answer to the next request, so a busy machine only adds time.
    fetches: list[float] = []

    def handler(api_key, version, body):
        if api_key == 1:  # Fetch
            fetches.append(time.monotonic())
        return fetch_response(0, _batch(0, [0, 1]), high_watermark=2, throttle_ms=300)

    with FakeBroker(handler) as broker, KafkaClient(_config(broker)) as client:
        client.fetch("t", 0, 0, 2).read_all()
        client.fetch("t", 0, 0, 2).read_all()
    assert len(fetches) == 2 and fetches[1] - fetches[0] >= 0.3


def test_a_dropped_connection_is_reopened_and_the_range_completes():
    state = {"n": 0}

    def handler(api_key, version, body):
        state["n"] += 1
        offset = body["topics"][0]["partitions"][0]["fetch_offset"]
        if state["n"] == 2:
            return CLOSE
        return fetch_response(0, _batch(offset, [0, 1]), high_watermark=6)

    with FakeBroker(handler) as broker, KafkaClient(_config(broker)) as client:
        reader = client.fetch("t", 0, 0, 6)
        assert reader.read_all().column("offset").to_pylist() == list(range(6))
        assert broker.connections >= 2 and reader.stats.retries == 1


def test_exhausted_retries_raise_a_typed_explained_error():
    def handler(api_key, version, body):
        return fetch_response(0, None, error_code=NOT_LEADER)

    with FakeBroker(handler) as broker, KafkaClient(_config(broker, retries=3)) as client, \
            pytest.raises(RetriesExhaustedError) as info:
        client.fetch("t", 0, 0, 5).read_all()
    assert info.value.attempts == 4
    assert "NOT_LEADER_OR_FOLLOWER" in str(info.value) and "t-0 at offset 0" in str(info.value)


def test_grouping_many_partitions_by_leader_checks_the_metadata_once(monkeypatch):
    # A trigger of a stream over a wide topic groups every partition by leader: checking the whole
    # topic's metadata once per partition made that quadratic (seconds on 1,000 partitions).
    with FakeBroker(lambda *a: None, partitions=2000) as broker, Cluster(_config(broker)) as cluster:
        from kafka_spark.client.metadata import TopicPartition

        tps = [TopicPartition("t", p) for p in range(2000)]
        calls = []
        topics = cluster.topics
        monkeypatch.setattr(cluster, "topics", lambda *a, **k: calls.append(a) or topics(*a, **k))
        assert cluster.group_by_leader(tps) == {1: tps}
        assert len(calls) == 1


class _Settling(FakeBroker):
    """Answers the topic's metadata with INVALID_REPLICATION_FACTOR `times` times first, as a broker just started
    does for a topic it would create on demand before it has seen the live brokers."""

    def __init__(self, times: int) -> None:
        super().__init__(lambda *a: None)
        self.times = times

    def metadata(self):
        answer = super().metadata()
        if self.times > 0 and answer["topics"]:
            self.times -= 1
            answer["topics"][0].update(error_code=38, partitions=[])
        return answer


def test_a_broker_still_settling_is_waited_out_and_one_that_stays_so_fails_with_its_error():
    from kafka_spark.errors.codes import InvalidReplicationFactorError

    with _Settling(3) as broker, Cluster(_config(broker)) as cluster:
        assert [tp.partition for tp in cluster.partitions("t")] == [0]
    with _Settling(1000) as broker, Cluster(_config(broker)) as cluster, \
            pytest.raises(InvalidReplicationFactorError, match="INVALID_REPLICATION_FACTOR"):
        cluster.partitions("t")
    assert broker.times < 1000 - 5  # asked again several times before giving up
