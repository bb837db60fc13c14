"""Records for the dead-letter tests of both table formats: good JSON values and bad ones, each with the error the
sink must give it, produced to two partitions and remembered."""

from __future__ import annotations

import json

from kafka_spark.client.producer.producer import Producer

SCHEMA = "n INT, name STRING"
NOT_JSON = "not valid JSON"
MISMATCH = f"does not match the schema {SCHEMA}"
GOOD = object()  # stands for a value that fits the schema: {"n": <its offset>, "name": "p<partition>-<offset>"}
# (partition, value, the error the sink must give it): good JSON, malformed JSON, type mismatches (a string
# and a fraction for an INT, an array for a struct), an empty value and null values (tombstones, not bad).
MIXED = [
    (0, GOOD, None), (0, b'{"n": 1, "name":', NOT_JSON), (0, GOOD, None), (0, b'{"n": "abc"}', MISMATCH),
    (0, None, None), (0, GOOD, None),
    (1, b"", NOT_JSON), (1, GOOD, None), (1, b'{"n": 1.5}', MISMATCH), (1, b"[1, 2]", MISMATCH), (1, GOOD, None),
    (1, None, None),
]


class Produced:
    """Every record a test produced to its two partitions, with the error the sink must give the bad ones."""

    def __init__(self, producer: Producer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self.records: dict[tuple[int, int], tuple[bytes | None, str | None]] = {}
        self.next = {0: 0, 1: 0}

    def send(self, records: list[tuple[int, object, str | None]]) -> None:
        for partition, value, why in records:
            offset = self.next[partition]
            if value is GOOD:
                value = json.dumps({"n": offset, "name": f"p{partition}-{offset}"}).encode()
            assert value is None or isinstance(value, bytes)
            self.producer.send(self.topic, value, key=f"k{offset}".encode(), partition=partition)
            self.records[(partition, offset)] = (value, why)
            self.next[partition] += 1
        self.producer.flush()

    def bad(self) -> dict[tuple[int, int], tuple[bytes | None, str]]:
        return {k: (v, why) for k, (v, why) in self.records.items() if why is not None}

    def good(self) -> set[tuple[int, int]]:
        return {k for k, (_, why) in self.records.items() if why is None}
