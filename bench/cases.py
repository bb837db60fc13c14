"""Benchmark cases (value size x codec x partitions x records) and producing their topics once."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from kafka_spark.client import KafkaClient
from kafka_spark.client.metadata import TopicPartition

SIZES = (100, 1000)
CODECS = ("none", "lz4", "zstd")
PARTITIONS = (1, 8)
# The smallest cross-section covering both sizes, compression and both partition counts.
QUICK_NAMES = ("100b-none-1p", "1000b-lz4-8p")
SCALING_NAME = "100b-none-1p"


@dataclass(frozen=True)
class Case:
    """One data set: `records` values of `size` bytes, compressed with `codec`, over `partitions`."""

    size: int
    codec: str
    partitions: int
    records: int
    json: bool = False  # JSON objects of about `size` bytes (JSON_SCHEMA) instead of random bytes

    @property
    def name(self) -> str:
        return f"{self.size}b-{self.codec}-{self.partitions}p" + ("-json" if self.json else "")

    @property
    def topic(self) -> str:
        return f"bench-{self.name}-{self.records}"

    @property
    def payload_bytes(self) -> int:  # approximate for JSON cases
        # ProducerPerformance sends null keys and values of exactly `size` bytes.
        return self.size * self.records


@dataclass
class Dataset:
    """A produced topic: the offset range of every partition and what went into the log."""

    case: Case
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    log_bytes: int = 0
    producer_report: str = ""

    @property
    def records(self) -> int:
        return sum(end - start for start, end in self.ranges.values())

    def summary(self) -> dict[str, object]:
        return {**asdict(self.case), "name": self.case.name, "topic": self.case.topic, "log_bytes": self.log_bytes,
                "ranges": {str(p): list(r) for p, r in self.ranges.items()}, "producer": self.producer_report}


def all_cases(records: int) -> list[Case]:
    """The full matrix, in a stable order."""
    return [Case(s, c, p, records) for s in SIZES for c in CODECS for p in PARTITIONS]


def select(cases: list[Case], names: str | None) -> list[Case]:
    """Cases whose name matches one of the comma-separated regular expressions in `names`."""
    if not names:
        return cases
    patterns = [re.compile(n.strip()) for n in names.split(",") if n.strip()]
    chosen = [c for c in cases if any(p.fullmatch(c.name) or p.search(c.name) for p in patterns)]
    if not chosen:
        raise SystemExit(f"no case matches {names!r}; cases are: {', '.join(c.name for c in cases)}")
    return chosen


# The value_schema of JSON cases (json_payloads).
JSON_SCHEMA = "id BIGINT, name STRING, amount DECIMAL(12,2), ratio DOUBLE, ok BOOLEAN, tags ARRAY<STRING>, note STRING"


def json_payloads(size: int, count: int = 1000) -> list[str]:
    """`count` distinct JSON objects of JSON_SCHEMA's fields, each padded (`note`) to about `size` bytes."""
    import json
    import random

    rng = random.Random(size)
    out = []
    for i in range(count):
        record = {"id": i * 7919, "name": f"customer-{rng.randrange(10**6)}", "amount": None,
                  "ratio": rng.random(), "ok": i % 3 == 0, "tags": ["a", "bb"][: i % 3], "note": ""}
        amount = f"{rng.randrange(10**6)}.{rng.randrange(100):02d}"  # a JSON number with two decimals
        text = json.dumps(record).replace('"amount": null', f'"amount": {amount}')
        out.append(text.replace('"note": ""', '"note": "' + "x" * max(size - len(text), 0) + '"'))
    return out


def produce(node, case: Case) -> Dataset:  # node: kafka_spark.local.KafkaNode
    """Create the case's topic and fill it with Kafka's ProducerPerformance; check what arrived."""
    import tempfile
    from pathlib import Path

    tools = node.tools
    # One large segment per partition: a fetch never straddles segments, as on a production broker.
    tools.create_topic(case.topic, partitions=case.partitions,
                       configs={"segment.bytes": 1 << 30, "retention.ms": -1, "retention.bytes": -1})
    props = {"compression.type": case.codec, "linger.ms": 10, "batch.size": 65536, "acks": 1}
    if case.json:
        with tempfile.TemporaryDirectory() as scratch:
            payloads = Path(scratch) / "payloads.txt"
            payloads.write_text("\n".join(json_payloads(case.size)))
            report = tools.produce_perf(case.topic, case.records, props=props, payload_file=payloads)
    else:
        report = tools.produce_perf(case.topic, case.records, case.size, props=props)
    data = Dataset(case, producer_report=report.strip().splitlines()[-1] if report.strip() else "")
    with KafkaClient({"bootstrap.servers": node.bootstrap}) as client:
        tps = [TopicPartition(case.topic, p) for p in range(case.partitions)]
        starts = client.earliest_offsets(tps)
        ends = client.latest_offsets(tps)
    data.ranges = {tp.partition: (starts[tp], ends[tp]) for tp in tps}
    if data.records != case.records:
        raise SystemExit(f"{case.topic}: expected {case.records} records, the log holds {data.records}")
    data.log_bytes = sum(f.stat().st_size for p in range(case.partitions)
                         for f in (node.log_dir / f"{case.topic}-{p}").glob("*.log"))
    return data
