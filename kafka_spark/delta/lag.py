"""How far each sink of a Delta table is behind the brokers: its committed offsets against the latest."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig
from kafka_spark.delta.location import TableLocation
from kafka_spark.delta.position import committed_positions
from kafka_spark.errors import ConfigError
from kafka_spark.sink.lag import SinkLag, sink_lag


def table_lag(table: str | os.PathLike[str] | TableLocation, kafka_config: ClientConfig | Mapping[str, Any],
              sink_id: str | None = None, conf: Any = None) -> dict[str, SinkLag]:
    """The lag of every sink of `table` (or only `sink_id`), keyed by sink id; {} for a table with no sink.

    `table` and `conf` (how to reach its store) are as in `committed_positions`.
    """
    positions = committed_positions(table, conf)
    if sink_id is not None:
        if sink_id not in positions:
            known = ", ".join(sorted(positions)) or "none"
            raise ConfigError(f"sink {sink_id!r} has not committed to {table} (sinks: {known})")
        positions = {sink_id: positions[sink_id]}
    if not positions:
        return {}
    with Cluster(kafka_config) as cluster:
        return {sid: sink_lag(cluster, commit) for sid, commit in sorted(positions.items())}
