"""The DataFrame a batch writes: exactly its plan's offsets read through `format("pykafka")`, then the
user's transform (SQL over the view `kafka`, a callable or a `module:function`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kafka_spark.client.callables import import_callable
from kafka_spark.offsets.ranges import offsets_to_json, ranges_to_json
from kafka_spark.sink.options import KafkaSource, Transform
from kafka_spark.sink.plan import BatchPlan
from kafka_spark.spark.redaction import redact_secret_options
from kafka_spark.spark.source.options import PLANNED_RANGES


def read_plan(spark, source: KafkaSource, plan: BatchPlan, extra: Mapping[str, str] | None = None):
    """The DataFrame of exactly the plan's offsets, through `format("pykafka")`, in the plan's tasks (`extra`:
    further `pykafka` options)."""
    reading = plan.reading
    redact_secret_options(spark)
    if not reading:
        # Nothing to read but the position still moves (only lost offsets): an empty frame.
        if source.decoding:
            return spark.createDataFrame([], schema=decoded_ddl(source))
        from kafka_spark.records import kafka_schema

        return spark.createDataFrame(kafka_schema(source.include_headers).empty_table())
    assign: dict[str, list[int]] = {}
    for tp in reading:
        assign.setdefault(tp.topic, []).append(tp.partition)
    # The plan's own ranges go along, so the reader reads them as planned instead of planning again.
    return (spark.read.format("pykafka").options(**source.client_options())
            .option("assign", json.dumps(assign))
            .option("startingOffsets", offsets_to_json({tp: plan.start[tp] for tp in reading}))
            .option("endingOffsets", offsets_to_json({tp: plan.end[tp] for tp in reading}))
            .option(PLANNED_RANGES, ranges_to_json(plan.ranges()))
            .options(**source.read_flags()).options(**(extra or {})).load())


def decoded_ddl(source: KafkaSource) -> str:
    """The schema a decoding read of `source` has (its subjects' latest schemas), for a batch with no rows."""
    from kafka_spark.formats.options import payload_options
    from kafka_spark.formats.plan import plan_payloads
    from kafka_spark.spark.schema import kafka_ddl

    payloads = payload_options(source.read_flags())
    assert payloads is not None
    return kafka_ddl(source.include_headers, plan_payloads(payloads, tuple(source.topics)))


_VIEW_LOCK = threading.Lock()
# The DataFrame of a plan's records, given further source options (commit_batch's `read`).
PlanReader = Callable[[Mapping[str, str] | None], Any]


def apply_transform(df, transform: str | Transform | None):
    """Apply a Python callable, a `module:function` path, or a SQL query over the view `kafka`."""
    if transform is None:
        return df
    if callable(transform):
        return transform(df)
    text = transform.strip()
    if is_sql(text):
        # The view and the query use the frame's own session: a micro-batch's frame lives in the
        # stream's session, not the one that started the query. spark.sql resolves the view while
        # it analyses the query, so the result keeps this batch's data after the view is replaced.
        session = df.sparkSession
        with _VIEW_LOCK:
            df.createOrReplaceTempView("kafka")
            return session.sql(text)
    return resolve_callable(text)(df)


def is_sql(text: str) -> bool:
    """Whether a transform's text is a SQL query (else it names a `module:function`)."""
    return text.strip().lower().startswith(("select", "with"))


def resolve_transform(transform: str | Transform | None) -> str | Transform | None:
    """A transform checked before any Spark work: SQL as it is, a `module:function` path imported now."""
    if transform is None or callable(transform) or is_sql(transform):
        return transform
    return resolve_callable(transform.strip())


def resolve_callable(path: str) -> Transform:
    """The function named by `module:function`, or a ConfigError saying what is wrong."""
    return import_callable(path, f"transform {path!r}",
                           f"transform {path!r}: expected a SQL SELECT over the view `kafka` or 'module:function'")
