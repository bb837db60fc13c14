"""Offsets behind latest from a stream's progress, in the form of Spark's Kafka-source metrics."""

from __future__ import annotations

import json
from types import SimpleNamespace

from kafka_spark.spark.source.progress import offsets_behind_latest

LATEST = '{"t":{"0":10,"1":20,"2":5}}'
END = '{"t":{"0":7,"1":20}}'
EXPECTED = {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "3", "avgOffsetsBehindLatest": "1.0"}


def test_from_a_progress_object_its_dict_or_its_json():
    assert offsets_behind_latest(SimpleNamespace(latestOffset=LATEST, endOffset=END)) == EXPECTED
    as_dict = {"description": "pykafka", "latestOffset": json.loads(LATEST), "endOffset": json.loads(END)}
    assert offsets_behind_latest(as_dict) == EXPECTED
    assert offsets_behind_latest(json.dumps(as_dict)) == EXPECTED


def test_empty_before_the_first_batch():
    assert offsets_behind_latest(SimpleNamespace(latestOffset=None, endOffset=END)) == {}
    assert offsets_behind_latest({"latestOffset": LATEST, "endOffset": None}) == {}
