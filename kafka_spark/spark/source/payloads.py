"""The schemas a `pykafka` / `pykafka-log` query decodes keys and values with, looked up once per query."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_spark.formats.plan import PayloadPlan
    from kafka_spark.spark.source.options import SourceOptions


def query_plan(source: object, options: SourceOptions) -> PayloadPlan | None:
    """The query's schemas, looked up on the first call and kept on `source` (a DataSource): Spark pickles the
    source after schema() and calls reader() on the copy, which must decode to the very schema declared even
    if the subject gained a version in between."""
    if options.payloads is None:
        return None
    plan: PayloadPlan | None = source.__dict__.get("_payload_plan")
    if plan is None or plan.options != options.payloads:
        from kafka_spark.formats.plan import plan_payloads

        plan = source.__dict__["_payload_plan"] = plan_payloads(options.payloads, options.topics)
    return plan
