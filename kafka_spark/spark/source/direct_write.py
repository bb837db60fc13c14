"""Internal options of a read that writes its ranges somewhere instead of yielding records (the Delta sink's
direct writer), shared by `format("pykafka")` and `format("pykafka-log")`.

`directWriteTo` is a JSON object naming the writer (`module:function` within kafka_spark), the DDL of the rows
it yields, its own spec, and whether it takes keys and values as binary_view arrays (`views`, for raw records
only: a payload decode needs them as binary); `directWriteSecret` holds what the writer needs to reach the
store, apart from the spec, under a name that Spark's default redaction pattern (`secret`) matches, so no plan
shows it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import OffsetRange

if TYPE_CHECKING:
    import pyarrow as pa

DIRECT_WRITE = "directWriteTo"
DIRECT_WRITE_SECRET = "directWriteSecret"
DIRECT_WRITE_OPTIONS = (DIRECT_WRITE, DIRECT_WRITE_SECRET)


@dataclass(frozen=True)
class DirectWrite:
    """A read's ranges written by `writer(batches, range, spec, secret)`, which yields the rows `rows_ddl` says;
    `views`: the writer takes keys and values as binary_view arrays."""

    writer: str
    rows_ddl: str
    spec: str
    secret: str | None = field(default=None, repr=False)
    views: bool = False

    def views_for(self, payload_plan: object | None) -> bool:
        """Whether a read decodes keys and values as views for this writer: not when a payload plan decodes
        them (it needs them as binary)."""
        return self.views and payload_plan is None

    def write(self, batches: Iterator[pa.RecordBatch], r: OffsetRange) -> Iterator[pa.RecordBatch]:
        module, _, name = self.writer.partition(":")
        function = getattr(importlib.import_module(module), name)
        yield from function(batches, r, self.spec, self.secret)


def direct_write(options: Mapping[str, str]) -> DirectWrite | None:
    """The read's direct write, if its options ask for one; ConfigError for a malformed one."""
    given = {k.lower(): v for k, v in options.items()}
    text = given.get(DIRECT_WRITE.lower())
    if text is None:
        return None
    try:
        raw = json.loads(text)
        writer, ddl, spec = str(raw["writer"]), str(raw["rows"]), json.dumps(raw["spec"])
        views = raw.get("views") is True
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ConfigError(f"option {DIRECT_WRITE!r} is internal to the Delta sink and malformed") from None
    if not writer.startswith("kafka_spark.") or ":" not in writer:
        raise ConfigError(f"option {DIRECT_WRITE!r}: the writer must be a kafka_spark function")
    return DirectWrite(writer, ddl, spec, given.get(DIRECT_WRITE_SECRET.lower()), views)


__all__ = ["DIRECT_WRITE", "DIRECT_WRITE_OPTIONS", "DIRECT_WRITE_SECRET", "DirectWrite", "direct_write"]
