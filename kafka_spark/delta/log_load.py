"""Back-filling a table from Kafka log directories: a batch load whose records come from segment files
(`format("pykafka-log")`) instead of brokers, committed with its offsets exactly as a load from brokers is.

The batch runs from the table's committed offsets (for a partition new to the table: `starting`, resolved in
the files, as a broker would) to the end of the files (their high watermark, or the last stable offset under
read_committed), capped by `max_records`; so a second back-fill, or a load from brokers with the same sink id,
continues where it ended. Files that end before the table's position (an older copy, or a high watermark the
broker has not checkpointed yet) add nothing; a position below the files' log start is data loss, as on a broker.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.batch_commit import commit_batch
from kafka_spark.delta.dead_letter import check_options
from kafka_spark.delta.location import locate
from kafka_spark.delta.position import sink_positions
from kafka_spark.delta.storage import session_hadoop_conf
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.admission import rate_limit
from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.plan import BatchPlan, checked_start, refuse_shared, starting_spec
from kafka_spark.sink.position import SinkCommit, check_sink_id
from kafka_spark.sink.read_plan import read_plan
from kafka_spark.sink.results import LoadResult
from kafka_spark.spark.log.options import SOURCE_NAME, parse_log_options
from kafka_spark.spark.log.planner import PartitionBounds, partition_bounds
from kafka_spark.spark.redaction import redact_secret_options

# Settings that need a cluster, which a load from files does not reach.
_CLUSTER_ONLY = {"dead_letter": "a dead letter's batch is read again from the brokers after a crash",
                 "publish_group": "consumer groups live on brokers",
                 "publish_zookeeper_group": "it mirrors a cluster's consumer offsets",
                 "start_zookeeper_group": "it is a cluster's consumer offsets"}


def load_log_dirs(spark: Any, options: LoadOptions) -> LoadResult:
    """Load the records of `options.log_dirs` the table has not committed (up to `max_records`) in one commit."""
    started = time.monotonic()
    for name, why in _CLUSTER_ONLY.items():
        if getattr(options, name):
            raise ConfigError(f"{name} cannot be used with log_dirs: {why}; load from the brokers for it")
    target = options.target
    sink_id = check_sink_id(target.sink_id)
    check_options(spark, target, options.parsing)
    location = locate(target.table, spark)
    previous, others = sink_positions(location, sink_id)
    reading = read_options(spark, options)
    found = partition_bounds(parse_log_options({**reading, **_selection(options), **_starting(options.starting)}))
    plan = plan_files(found, previous, others, options.max_records, options.fail_on_data_loss)
    run_id = uuid.uuid4().hex[:12]
    if plan.size == 0 and previous is not None and not plan.lost:
        return LoadResult("up-to-date", sink_id, previous.batch, seconds=time.monotonic() - started,
                          offsets=previous.offsets, run_id=run_id)

    def read(extra: Mapping[str, str] | None) -> Any:
        return read_files(spark, options, reading, plan, extra)

    result = commit_batch(spark, options, plan, run_id, location, read)
    result.seconds = time.monotonic() - started
    return result


def plan_files(bounds: Mapping[TopicPartition, PartitionBounds], previous: SinkCommit | None,
               others: Sequence[SinkCommit], max_records: int | None, fail_on_data_loss: bool) -> BatchPlan:
    """The next batch after `previous` over the partitions the files hold (`bounds`), as plan.py's `plan_batch`
    plans one over a cluster's."""
    tps = sorted(bounds)
    refuse_shared(others, tps)
    committed = previous.offsets if previous else {}
    start: dict[TopicPartition, int] = {}
    lost: dict[TopicPartition, int] = {}
    for tp in tps:
        b = bounds[tp]
        if tp not in committed:
            # A new table starts where asked; a partition new to a table at its beginning, as from brokers.
            start[tp] = b.start if previous is None else b.earliest
            continue
        # Files that end before the position cannot tell a stale copy from a recreated topic: they add nothing.
        start[tp] = checked_start(tp, committed[tp], max(committed[tp], b.end), b.earliest, fail_on_data_loss)
        if start[tp] > committed[tp]:
            lost[tp] = start[tp] - committed[tp]
    reachable = {tp: max(bounds[tp].end, start[tp]) for tp in start}
    end = rate_limit(max_records, start, reachable, exact=True) if max_records else reachable
    carried = {tp: off for tp, off in committed.items() if tp not in start}
    new = [tp for tp in tps if tp not in committed] if previous is not None else []
    return BatchPlan(batch=previous.batch + 1 if previous else 0, start=start, end=end, carried=carried,
                     lost=lost, new_partitions=new)


def read_options(spark: Any, options: LoadOptions) -> dict[str, str]:
    """The `pykafka-log` options of every read of the load: the log dirs, the store settings the session holds
    for them, the isolation level, and the flags and decoding a read from brokers gets."""
    given = options.log_dirs
    paths = [given] if isinstance(given, str) else list(given or ())
    if not any(p.strip() for p in paths):
        raise ConfigError("log_dirs must name one or more Kafka log directories")
    reading = {"path": ",".join(paths)}
    for path in paths:
        if "://" in path:
            # Spark's Python workers never see the session's Hadoop settings: the store's, credentials included,
            # travel as options, which read_files makes the session hide in every plan (spark/redaction.py).
            reading.update(session_hadoop_conf(spark, path))
    # Of the client properties, only the isolation level means anything to files.
    reading.update({f"kafka.{k}": v for k, v in options.kafka.items() if k.lower() == "isolation.level"})
    return {**reading, **options.source.read_flags()}


def read_files(spark: Any, options: LoadOptions, reading: Mapping[str, str], plan: BatchPlan,
               extra: Mapping[str, str] | None = None) -> Any:
    """The DataFrame of exactly the plan's offsets, read from the files (`extra`: further options)."""
    if not plan.reading:
        return read_plan(spark, options.source, plan)  # an empty frame; no broker is asked
    redact_secret_options(spark)
    assign: dict[str, list[int]] = {}
    for tp in plan.reading:
        assign.setdefault(tp.topic, []).append(tp.partition)
    return (spark.read.format(SOURCE_NAME).options(**reading).option("assign", json.dumps(assign))
            .option("startingOffsets", offsets_to_json({tp: plan.start[tp] for tp in plan.reading}))
            .option("endingOffsets", offsets_to_json({tp: plan.end[tp] for tp in plan.reading}))
            .options(**(extra or {})).load())


def _selection(options: LoadOptions) -> dict[str, str]:
    if options.pattern:
        return {"subscribePattern": options.pattern}
    if not options.topics:
        raise ConfigError("give the topics (or a pattern) to load from log_dirs")
    return {"subscribe": ",".join(options.topics)}


def _starting(starting: str | int) -> dict[str, str]:
    """`starting` as the read's options; a timestamp with no record at or after it starts at the end."""
    spec = starting_spec(starting)
    if spec.kind == "timestamp":
        return {"startingTimestamp": str(spec.timestamp), "startingOffsetsByTimestampStrategy": "latest"}
    return {"startingOffsets": spec.kind}


__all__ = ["load_log_dirs", "plan_files", "read_files", "read_options"]
