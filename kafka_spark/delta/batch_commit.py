"""One batch's rows and offsets committed through the writer chosen for its table (direct or Spark's)."""

from __future__ import annotations

from kafka_spark.delta.direct_commit import write_direct
from kafka_spark.delta.location import TableLocation
from kafka_spark.delta.spark_commit import write_commit
from kafka_spark.delta.writer_choice import choose_writer
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.plan import BatchPlan
from kafka_spark.sink.position import SinkCommit, now_ms
from kafka_spark.sink.read_plan import PlanReader, read_plan
from kafka_spark.sink.results import LoadResult


def commit_batch(spark, options: LoadOptions, plan: BatchPlan, run_id: str,
                 location: TableLocation | None = None, read: PlanReader | None = None) -> LoadResult:
    """Write the plan's rows and offsets in one Delta commit; detect a batch someone else committed.

    `read(extra)` gives the DataFrame of the plan's records with the further source options `extra` (the
    direct writer's); by default `read_plan`, from the brokers."""
    commit = SinkCommit(sink_id=options.sink_id, batch=plan.batch, offsets=plan.committed_offsets(),
                        start_offsets=dict(plan.start), run_id=run_id, committed_at_ms=now_ms())
    choice = choose_writer(spark, options, location)
    if choice.target is not None:
        result = write_direct(spark, options, plan, commit, choice.target, read)
    else:
        df = read(None) if read is not None else read_plan(spark, options.source, plan)
        result = write_commit(spark, options.target, options.format, options.parsing, df, commit,
                              f"batch {plan.batch}", location)
    result.lost = dict(plan.lost)
    if result.writer_reason is None:  # else the direct writer left this batch to Spark's, saying why
        result.writer, result.writer_reason = choice.writer, choice.reason
    return result
