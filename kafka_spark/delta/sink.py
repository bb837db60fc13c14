"""Kafka -> Delta batch loads with the offsets committed in the same Delta transaction as the rows."""

from __future__ import annotations

import logging
import time
import uuid

from kafka_spark.client.cluster import Cluster
from kafka_spark.delta.batch_commit import commit_batch
from kafka_spark.delta.dead_letter import check_options, reconcile
from kafka_spark.delta.location import locate
from kafka_spark.delta.options import LoadOptions
from kafka_spark.delta.plan import plan_batch
from kafka_spark.delta.position import (
    check_sink_id,
    sink_positions,
)
from kafka_spark.delta.publish import check_publish_options, publish_committed
from kafka_spark.delta.results import LoadResult
from kafka_spark.errors import ConfigError

log = logging.getLogger(__name__)

def load(spark, options: LoadOptions) -> LoadResult:
    """Load everything new since the table's committed offsets (up to `max_records`) in one Delta commit."""
    if options.routing is not None:
        raise ConfigError("options with a routing load many tables: call load_tables, which reports each table")
    if options.log_dirs is not None:
        from kafka_spark.delta.log_load import load_log_dirs

        return load_log_dirs(spark, options)
    started = time.monotonic()
    source, target, parsing, publishing = options.source, options.target, options.parsing, options.publishing
    sink_id = check_sink_id(target.sink_id)
    check_options(spark, target, parsing)
    check_publish_options(source, publishing)
    run_id = uuid.uuid4().hex[:12]
    location = locate(target.table, spark)
    previous, others = sink_positions(location, sink_id)
    reconcile(spark, source, target, parsing, previous)
    with Cluster(source.kafka) as cluster:
        plan = plan_batch(cluster, previous, others, source.topics, source.pattern, source.starting,
                          options.max_records, source.fail_on_data_loss, source.start_zookeeper_group)
        if plan.size == 0 and previous is not None and not plan.lost:
            publish_committed(publishing, previous.offsets, cluster)  # in case the last run died before it
            return LoadResult("up-to-date", sink_id, previous.batch, seconds=time.monotonic() - started,
                              offsets=previous.offsets, run_id=run_id)
        result = commit_batch(spark, options, plan, run_id, location)
        publish_committed(publishing, result.offsets, cluster)
    result.seconds = time.monotonic() - started
    return result


