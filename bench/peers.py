"""Client-side contenders, each run in a fresh Python process so its peak RSS is its own.

    python bench/peers.py NAME '{"bootstrap": ..., "topic": ..., "ranges": {"0": [start, end]}, ...}'

prints one JSON line: records, payload bytes (key + value lengths), seconds (the read loop only,
after imports) and max_rss_mb (`getrusage` of this process: interpreter, libraries and all buffers).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Spec = dict[str, Any]


def _ranges(spec: Spec) -> dict[int, tuple[int, int]]:
    return {int(p): (int(r[0]), int(r[1])) for p, r in spec["ranges"].items()}


def client_ours(spec: Spec) -> tuple[int, int]:
    """kafka_spark's client: each partition range into Arrow batches, one partition after another."""
    import pyarrow.compute as pc

    from kafka_spark.client import KafkaClient

    rows = payload = 0
    with KafkaClient({"bootstrap.servers": spec["bootstrap"]}) as client:
        for p, (start, end) in _ranges(spec).items():
            for batch in client.fetch(spec["topic"], p, start, end):
                rows += batch.num_rows
                for col in ("key", "value"):
                    total = pc.sum(pc.binary_length(batch.column(col))).as_py()
                    payload += total or 0
    return rows, payload


def kafka_python(spec: Spec) -> tuple[int, int]:
    """kafka-python's KafkaConsumer: assign, seek, poll until every range is consumed."""
    from kafka import KafkaConsumer, TopicPartition

    ranges = _ranges(spec)
    consumer = KafkaConsumer(bootstrap_servers=spec["bootstrap"], group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    tps = {TopicPartition(spec["topic"], p): r for p, r in ranges.items()}
    consumer.assign(list(tps))
    for tp, (start, _) in tps.items():
        consumer.seek(tp, start)
    want = sum(end - start for start, end in ranges.values())
    rows = payload = 0
    try:
        while rows < want:
            for tp, records in consumer.poll(timeout_ms=1000, max_records=100_000).items():
                end = tps[tp][1]
                for record in records:
                    if record.offset >= end:
                        continue
                    rows += 1
                    payload += len(record.value or b"") + len(record.key or b"")
    finally:
        consumer.close()
    return rows, payload


def confluent_kafka(spec: Spec) -> tuple[int, int]:
    """confluent-kafka (librdkafka) Consumer: assign at the start offsets, consume in batches."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    ranges = _ranges(spec)
    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": "bench-confluent",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(spec["topic"], p, start) for p, (start, _) in ranges.items()])
    ends = {p: end for p, (_, end) in ranges.items()}
    want = sum(end - start for start, end in ranges.values())
    rows = payload = 0
    try:
        while rows < want:
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error():
                    raise KafkaException(msg.error())
                if msg.offset() >= ends[msg.partition()]:
                    continue
                rows += 1
                payload += len(msg.value() or b"") + len(msg.key() or b"")
    finally:
        consumer.close()
    return rows, payload


def _segment_chunks(spec: Spec, limit: int = 4 << 20) -> list[tuple[int, memoryview]]:
    """The topic's segment files cut at batch boundaries into pieces of at most `limit` bytes."""
    from kafka_spark.client.fetch.batches import scan

    chunks = []
    for p in _ranges(spec):
        for path in sorted(Path(spec["log_dir"], f"{spec['topic']}-{p}").glob("*.log")):
            view = memoryview(path.read_bytes())
            pos = 0
            while pos < len(view):
                found = scan(view[pos:pos + limit])
                if found.complete_bytes == 0:
                    break
                chunks.append((p, view[pos:pos + found.complete_bytes]))
                pos += found.complete_bytes
    return chunks


def decoder_ours(spec: Spec) -> tuple[int, int]:
    """`decode_to_arrow` over the topic's segment bytes (read before the clock starts)."""
    import pyarrow.compute as pc

    from kafka_spark.records import decode_to_arrow

    chunks = spec["_chunks"]
    rows = payload = 0
    for p, chunk in chunks:
        batch = decode_to_arrow(chunk, spec["topic"], p).batch
        rows += batch.num_rows
        payload += pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0
    return rows, payload


def decoder_kafka_python(spec: Spec) -> tuple[int, int]:
    """kafka-python's MemoryRecords over the same segment bytes, touching every record's fields."""
    from kafka.record.memory_records import MemoryRecords

    rows = payload = 0
    for _, chunk in spec["_chunks"]:
        records = MemoryRecords(bytes(chunk))
        while records.has_next():
            for record in records.next_batch():
                _ = (record.offset, record.timestamp)
                rows += 1
                payload += len(record.value or b"") + len(record.key or b"")
    return rows, payload


CONTENDERS: dict[str, Callable[[Spec], tuple[int, int]]] = {
    "client-ours": client_ours,
    "kafka-python": kafka_python,
    "confluent-kafka": confluent_kafka,
    "decoder-ours": decoder_ours,
    "decoder-kafka-python": decoder_kafka_python,
}


# Imported before the clock starts: library start-up is not reading.
_IMPORTS = {
    "client-ours": ("pyarrow.compute", "kafka_spark.client"),
    "kafka-python": ("kafka",),
    "confluent-kafka": ("confluent_kafka",),
    "decoder-ours": ("pyarrow.compute", "kafka_spark.records"),
    "decoder-kafka-python": ("kafka.record.memory_records",),
}


def main(argv: list[str]) -> None:
    import importlib

    name, spec = argv[0], json.loads(argv[1])
    fn = CONTENDERS[name]
    for module in _IMPORTS[name]:
        importlib.import_module(module)
    if name.startswith("decoder-"):
        spec["_chunks"] = _segment_chunks(spec)
    profile = spec.get("profile")
    profiler = None
    if profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
    started = time.perf_counter()
    rows, payload = fn(spec)
    seconds = time.perf_counter() - started
    if profiler is not None:
        profiler.stop()
        Path(profile).write_text(profiler.output_text(unicode=False, color=False, show_all=False))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"records": rows, "payload_bytes": payload, "seconds": seconds, "max_rss_mb": rss_mb}))


if __name__ == "__main__":
    main(sys.argv[1:])
