"""The position and lag of every table a routing writes: what `delta-offsets` shows over a table template."""

from __future__ import annotations

from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.delta.lag import SinkLag, sink_lag
from kafka_spark.delta.options import LoadOptions
from kafka_spark.delta.position import committed_position
from kafka_spark.delta.routed import routed_tables, selection
from kafka_spark.offsets.resolve import resolve_partitions


def tables_lag(options: LoadOptions, conf: Any = None) -> dict[str, SinkLag | None]:
    """Each routed table's committed position against the brokers, by table (None: the table does not exist
    or its sink has not committed), over the topics the options select now. `conf` reaches the tables'
    store, as in `committed_positions`."""
    with Cluster(options.kafka) as cluster:
        topics, pattern = selection(options)
        tps = resolve_partitions(cluster, subscribe=topics, pattern=pattern)
        routed = routed_tables(options, {tp.topic for tp in tps})
        lags: dict[str, SinkLag | None] = {}
        for table in routed:
            commit = committed_position(table.table, table.options.sink_id, conf)
            lags[table.table] = sink_lag(cluster, commit) if commit is not None else None
        return lags
