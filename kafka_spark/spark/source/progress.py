"""Spark's Kafka-source lag metrics from a stream's progress, for sources that cannot report them.

PySpark 4.2 gives a Python source no way to fill `StreamingQueryProgress.sources[i].metrics`; the
JVM Kafka source puts `{min,max,avg}OffsetsBehindLatest` there. The same figures follow from the
progress's `latestOffset` (what `reportLatestOffset` returned) and `endOffset` (what the batch read to).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kafka_spark.offsets.admission import behind_latest
from kafka_spark.offsets.ranges import offsets_from_json


def offsets_behind_latest(source: Any) -> dict[str, str]:
    """`{min,max,avg}OffsetsBehindLatest` of one source progress (a SourceProgress, its dict, or JSON).

    Empty when the progress has no latest or end offset yet, like Spark's metrics.
    """
    if isinstance(source, str):
        source = json.loads(source)
    if not isinstance(source, Mapping):
        source = {k: getattr(source, k, None) for k in ("latestOffset", "endOffset")}
    latest, end = _offsets(source.get("latestOffset")), _offsets(source.get("endOffset"))
    return behind_latest(latest, end)


def _offsets(value: Any) -> dict:
    if value is None or value == "null":
        return {}
    text = value if isinstance(value, str) else json.dumps(value)
    return offsets_from_json(text, "progress offsets")
