"""Capture golden response vectors from a real Kafka 4.1 and a real Kafka 3.9 broker.

Run by hand from the repository root (it starts and stops its own servers, about a minute)::

    .venv/bin/python tests/integration/protocol/capture_golden.py

It replaces tests/integration/protocol/golden/: one .hex file per response frame (without the
size prefix) in a folder per broker release, and index.json with, per vector, the API, the
version, the request body and bytes, and the facts the checks compare against. Every vector
must pass the same checks the tests apply before it is stored.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from broker_wire import CLIENT_ID, BrokerWire, Exchange, proven_range
from golden_format import GOLDEN, INDEX, dump_index, request_as_sent, to_json, write_hex
from proof_checks import check, usable_range
from proof_flows import (
    EARLIEST,
    LATEST,
    create_topics,
    fetch,
    group_lifecycle,
    init_producer_id,
    level_versions,
    list_offsets,
    metadata,
    produce_one,
    produce_with_java,
    sasl_handshake,
    sasl_plain_authenticate,
    server_context,
    topic_facts,
    topic_lifecycle,
)

from kafka_spark.protocol import ApiKey, decode_request
from kafka_spark.protocol.schemas import APIS

RECORDS = 5
TOPIC = "golden-records"
PRODUCED = "golden-produced"
# Fetch versions worth a vector besides the ends of the range: the last with down-converted
# magic 1 data, the last that names topics, the first that uses topic ids
FETCH_BOUNDARIES = (3, 12, 13)
WRONG_PASSWORD = "not-the-password"


class Recorder:
    """Collects the vectors of one broker; the first exchange per (label, version) wins."""

    def __init__(self, root: Path, broker: str, context: dict[str, Any]) -> None:
        self.root = root
        self.broker = broker
        self.context = context
        self.vectors: list[dict[str, Any]] = []
        self._seen: set[tuple[str, int]] = set()
        (root / broker).mkdir(parents=True)

    def add(self, label: str, ex: Exchange, **extra: Any) -> None:
        if (label, ex.version) in self._seen:
            return
        self._seen.add((label, ex.version))
        check(label, ex.body, ex.version, {**self.context, **extra})
        name = f"{self.broker}/{label}-v{ex.version}.hex"
        write_hex(self.root / name, ex.response)
        # the request frame is the source of truth: store the body exactly as it went out
        sent = request_as_sent(ex.api_key, ex.version, decode_request(ex.request[4:])[1])
        self.vectors.append({
            "file": name, "broker": self.broker, "api_key": ex.api_key, "api": APIS[ex.api_key].name,
            "version": ex.version, "label": label, "correlation_id": ex.correlation_id,
            "request": to_json(sent), "request_hex": ex.request.hex(), "context": to_json(extra),
        })


def capture_plaintext(server: Any, root: Path) -> Recorder:
    """Every API at its lowest and highest shared version, on the PLAINTEXT listener."""
    with BrokerWire(server.bootstrap) as wire:
        ranges = {key: proven_range(wire.broker_versions(), key) for key in APIS}
        create_topics(wire, ranges[ApiKey.CREATE_TOPICS][1], TOPIC, 1, {})
        produce_with_java(server, TOPIC, RECORDS)
        facts = topic_facts(wire, ranges[ApiKey.METADATA][1], TOPIC, RECORDS)
        context = {**server_context(server), "topic": TOPIC, "topic_id": str(facts.topic_id), "records": RECORDS}
        rec = Recorder(root, server.version, context)
        for level in ("min", "max"):
            versions = level_versions(ranges, level)
            rec.add("api-versions", wire.api_versions_exchange(versions[ApiKey.API_VERSIONS]))
            rec.add("metadata", metadata(wire, versions[ApiKey.METADATA], TOPIC))
            rec.add("list-offsets-latest", list_offsets(wire, versions[ApiKey.LIST_OFFSETS], TOPIC, LATEST))
            rec.add("list-offsets-earliest", list_offsets(wire, versions[ApiKey.LIST_OFFSETS], TOPIC, EARLIEST))
            rec.add("fetch", fetch(wire, versions[ApiKey.FETCH], facts))
            rec.add("init-producer-id", init_producer_id(wire, versions[ApiKey.INIT_PRODUCER_ID]))
            new_topic = f"golden-created-{level}"
            for label, ex in topic_lifecycle(wire, versions, new_topic, ranges[ApiKey.METADATA][1]):
                rec.add(label, ex, new_topic=new_topic)
            group = f"golden-group-{level}"
            for label, ex in group_lifecycle(wire, versions, group, TOPIC, RECORDS):
                rec.add(label, ex, group=group)
        lo, hi = ranges[ApiKey.FETCH]
        for version in FETCH_BOUNDARIES:
            if lo <= version <= hi:
                rec.add("fetch", fetch(wire, version, facts))
        create_topics(wire, ranges[ApiKey.CREATE_TOPICS][1], PRODUCED, 1, {})
        produced = topic_facts(wire, ranges[ApiKey.METADATA][1], PRODUCED, 0)
        # the lowest and the highest version the broker accepts, one record each
        for offset, version in enumerate(usable_range(server.version, ApiKey.PRODUCE)):
            ex = produce_one(wire, version, produced, b"key", b"value from v%d" % version)
            rec.add("produce", ex, new_topic=PRODUCED, new_topic_id=str(produced.topic_id), base_offset=offset)
    return rec


def capture_sasl(address: str, rec: Recorder) -> None:
    """SaslHandshake and SaslAuthenticate (PLAIN), each on a fresh connection as a client would."""
    from kafka_spark.local.kafka import SASL_USERS

    user, password = next(iter(SASL_USERS.items()))
    for version in (0, 1):
        with BrokerWire(address) as wire:
            rec.add("sasl-handshake", sasl_handshake(wire, version, "PLAIN"))
        with BrokerWire(address) as wire:
            rec.add("sasl-handshake-unsupported", sasl_handshake(wire, version, "GSSAPI"))
    for version in (0, 2):
        with BrokerWire(address) as wire:
            sasl_handshake(wire, 1, "PLAIN")
            rec.add("sasl-authenticate", sasl_plain_authenticate(wire, version, user, password))
        with BrokerWire(address) as wire:
            sasl_handshake(wire, 1, "PLAIN")
            ex = sasl_plain_authenticate(wire, version, user, WRONG_PASSWORD)
            rec.add("sasl-authenticate-wrong-password", ex, password=WRONG_PASSWORD)


def main() -> None:
    # run as a script: tests/ onto the path for the harness's Kafka 3.9
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from harness.kafka39 import start_kafka39

    from kafka_spark.local import start_kafka

    # capture next to the old vectors and swap at the end, so a failed run leaves them intact
    staging = GOLDEN.with_name("golden.new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    recorders: list[Recorder] = []
    kafka = start_kafka(secure=True)
    try:
        recorders.append(capture_plaintext(kafka, staging))
        capture_sasl(kafka.address("SASL_PLAINTEXT"), recorders[-1])
    finally:
        kafka.stop()
    kafka39 = start_kafka39()
    try:
        recorders.append(capture_plaintext(kafka39, staging))
    finally:
        kafka39.stop()
        kafka39.zookeeper.stop()
    index = {
        "client_id": CLIENT_ID,
        "brokers": {rec.broker: rec.context for rec in recorders},
        "vectors": [vector for rec in recorders for vector in rec.vectors],
    }
    (staging / INDEX.name).write_text(dump_index(index))
    shutil.rmtree(GOLDEN, ignore_errors=True)
    staging.rename(GOLDEN)
    print(f"{len(index['vectors'])} vectors from {', '.join(index['brokers'])} in {GOLDEN}")


if __name__ == "__main__":
    main()
