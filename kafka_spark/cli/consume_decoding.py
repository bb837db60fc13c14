"""How `kafka-spark consume` decodes keys and values: its format flags as `pykafka` decoding options, the
query's schemas resolved once, and each fetched batch decoded by the code a `pykafka` read runs."""

from __future__ import annotations

import argparse
from typing import Any

import pyarrow as pa

from kafka_spark.app.payloads import decoding_options, parse_format, registry_config, with_url
from kafka_spark.cli.decoded_json import json_text
from kafka_spark.formats.columns import ERROR_COLUMN, decode_batch
from kafka_spark.formats.options import PayloadOptions, payload_options
from kafka_spark.formats.plan import PayloadPlan, plan_payloads


class Decoding:
    """The decoded sides of one topic: batches in, rows with decoded `key`/`value` and their errors out."""

    def __init__(self, options: PayloadOptions) -> None:
        self.options = options
        self.sides = tuple(s.side for s in options.sides)
        self._plan: PayloadPlan | None = None
        self._types: dict[str, pa.DataType] = {}

    def plan(self, topic: str) -> None:
        """Look the sides' schemas up (the subjects' latest, or those --value-subject/--key-subject name)."""
        self._plan = plan_payloads(self.options, (topic,))

    def rows(self, batch: pa.RecordBatch) -> list[dict[str, Any]]:
        """The batch's records, decoded; a record that does not decode has its reason in keyError/valueError."""
        assert self._plan is not None, "plan() first"
        decoded = decode_batch(batch, self._plan)
        self._types = {side: decoded.schema.field(side).type for side in self.sides}
        rows: list[dict[str, Any]] = decoded.to_pylist()
        return rows

    def failed(self, row: dict[str, Any]) -> bool:
        return any(row.get(ERROR_COLUMN[side]) is not None for side in self.sides)

    def failure(self, row: dict[str, Any]) -> str:
        """Which record did not decode, and why (its sides' reasons)."""
        assert self._plan is not None
        where = f"{row['topic']} [{row['partition']}] offset {row['offset']}"
        reasons = [f"the {s.format.side} does not decode with {s.describe()}: {row[ERROR_COLUMN[s.format.side]]}"
                   for s in self._plan.sides if row.get(ERROR_COLUMN[s.format.side]) is not None]
        return f"{where}: {'; '.join(reasons)}"

    def json(self, row: dict[str, Any], side: str) -> str:
        """A decoded side of `row` as JSON."""
        return json_text(row[side], self._types[side])


def decoding_from_args(args: argparse.Namespace) -> Decoding | None:
    """The decoding the format flags ask for; None without --value-format or --key-format."""
    sides = ("value", "key")
    formats = {side: parse_format(getattr(args, f"{side}_format"), f"--{side}-format")
               for side in sides if getattr(args, f"{side}_format") is not None}
    options = decoding_options(
        formats, {side: getattr(args, f"{side}_subject") for side in sides},
        with_url(registry_config(args.schema_registry_config), args.schema_registry),
        [("--schema-registry", args.schema_registry), ("--schema-registry-config", args.schema_registry_config),
         ("--skip-message-on-error", args.skip_message_on_error)],
        "schema.registry.url in --schema-registry-config")
    if options is None:
        return None
    # PERMISSIVE: a bad record comes back with its reason, so the command decides to stop or go on.
    parsed = payload_options({**options, "mode": "PERMISSIVE"})
    assert parsed is not None  # a side decodes
    return Decoding(parsed)
