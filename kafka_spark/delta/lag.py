"""How far each sink of a Delta table is behind the brokers: its committed offsets against the latest."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kafka_spark.client.config import ClientConfig
from kafka_spark.delta.location import TableLocation
from kafka_spark.delta.position import committed_positions
from kafka_spark.sink.lag import SinkLag, only_sink, positions_lag


def table_lag(table: str | os.PathLike[str] | TableLocation, kafka_config: ClientConfig | Mapping[str, Any],
              sink_id: str | None = None, conf: Any = None) -> dict[str, SinkLag]:
    """The lag of every sink of `table` (or only `sink_id`), keyed by sink id; {} for a table with no sink.

    `table` and `conf` (how to reach its store) are as in `committed_positions`.
    """
    return positions_lag(only_sink(committed_positions(table, conf), sink_id, table), kafka_config)
