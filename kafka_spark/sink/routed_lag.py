"""The position and lag of every table a routing writes: what `delta-offsets` shows over a table template."""

from __future__ import annotations

from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.offsets.resolve import resolve_partitions
from kafka_spark.sink.lag import SinkLag, sink_lag
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.routed import routed_tables, selection
from kafka_spark.sink.table_format import TableFormat


def tables_lag(options: LoadOptions, table_format: TableFormat, conf: Any = None) -> dict[str, SinkLag | None]:
    """Each routed table's committed position against the brokers, by table (None: the table does not exist
    or its sink has not committed), over the topics the options select now. `conf` reaches the tables'
    store, as in `committed_positions`."""
    with Cluster(options.kafka) as cluster:
        topics, pattern = selection(options)
        tps = resolve_partitions(cluster, subscribe=topics, pattern=pattern)
        routed = routed_tables(options, {tp.topic for tp in tps})
        lags: dict[str, SinkLag | None] = {}
        for table in routed:
            commit = table_format.position(table_format.locate(table.table, conf), table.options.sink_id)
            lags[table.table] = sink_lag(cluster, commit) if commit is not None else None
        return lags
