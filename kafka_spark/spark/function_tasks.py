"""What the column functions' tasks run (functions.py builds them on the driver): a column's payloads decoded
or encoded with one codec per process, as an Arrow UDF (PySpark 4.1+) or one Python call per row (4.0)."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import pyarrow as pa

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.encoding import (
    InlineSource,
    WriteSide,
    derived_schema,
    encode_value,
    encoder_for,
    subject_writer,
    with_derived,
)
from kafka_spark.formats.model import PayloadDecoder, PayloadEncoder, RegisteredSchema
from kafka_spark.formats.options import PayloadOptions
from kafka_spark.formats.plan import SidePlan, decoder_for
from kafka_spark.formats.registry.settings import RegistrySettings
from kafka_spark.formats.registry.wire import frame, split

if TYPE_CHECKING:
    from pyspark.sql.column import Column

ColumnOrName = Union["Column", str]

_decoders: dict[ColumnDecoding, PayloadDecoder] = {}
_decoders_lock = threading.Lock()


@dataclass(frozen=True)
class ColumnDecoding:
    """How a from_* function decodes a column: through the registry (`plan`, `options`) or an inline schema."""

    function: str
    format: str
    permissive: bool
    plan: SidePlan | None = None
    options: PayloadOptions | None = None
    inline: RegisteredSchema | None = None
    source: InlineSource | None = None
    codec: tuple[tuple[str, str], ...] = ()
    message_name: str | None = None

    def decoder(self) -> PayloadDecoder:
        """The decoder, one per process (the registry's through the pykafka source's own cache)."""
        if self.plan is not None:
            assert self.options is not None
            return decoder_for(self.plan, self.options)
        with _decoders_lock:
            found = _decoders.get(self)
        if found is None:
            found = self._inline_decoder()
            with _decoders_lock:
                found = _decoders.setdefault(self, found)
        return found

    def _inline_decoder(self) -> PayloadDecoder:
        assert self.inline is not None and self.source is not None
        codec = dict(self.codec)
        if self.format == "avro":
            from kafka_spark.formats.avro.codec import avro_decoder

            return avro_decoder(self.inline, self.source, codec)
        if self.format == "protobuf":
            from kafka_spark.formats.protobuf.codec import protobuf_decoder

            return protobuf_decoder(self.inline, self.source, codec, self.message_name)
        from kafka_spark.formats.json_schema.codec import json_schema_decoder

        return json_schema_decoder(self.inline, self.source, codec)

    def values(self, column: pa.Array) -> pa.Array:
        """The column's payloads decoded; null stays null, a bad one fails (FAILFAST) or is null (PERMISSIVE)."""
        decoder = self.decoder()
        protobuf = self.format == "protobuf"
        indexes = inline_indexes(self) if protobuf and self.plan is None else ()
        what = self.plan.describe() if self.plan is not None else "the schema given"
        out: list[Any] = []
        for raw in column.to_pylist():
            if raw is None:
                out.append(None)
                continue
            if isinstance(raw, str):
                raw = raw.encode()
            try:
                if self.plan is not None:
                    schema_id, found, payload = split(raw, protobuf)
                    out.append(decoder.decode(schema_id, found, bytes(payload)))
                else:
                    out.append(decoder.decode(0, indexes, raw))
            except PayloadError as exc:
                if not self.permissive:
                    raise PayloadError(f"{self.function}: a value does not decode with {what}: {exc}. Set the option "
                                       "mode=PERMISSIVE to get null for such values") from None
                out.append(None)
        return pa.array(out, type=decoder.arrow_type)

    def column(self, data: ColumnOrName) -> Column:
        from kafka_spark.formats.spark_ddl import arrow_to_spark_ddl

        return _udf(self.function, self.values, arrow_to_spark_ddl(self.decoder().arrow_type), data)


def inline_indexes(decoding: ColumnDecoding) -> tuple[int, ...]:
    from kafka_spark.formats.protobuf.schema import find_message, load_schema, message_indexes

    assert decoding.inline is not None and decoding.source is not None
    return message_indexes(find_message(load_schema(decoding.inline, decoding.source), decoding.message_name))


@dataclass(frozen=True)
class ColumnEncoding:
    """How a to_* function encodes a column: with a registered writer schema (`side`), or plain with `inline`
    (derived from the column type when None)."""

    function: str
    format: str
    side: WriteSide | None = None
    registry: RegistrySettings | None = None
    inline: RegisteredSchema | None = None
    source: InlineSource | None = None
    message_name: str | None = None

    def encoder(self, arrow_type: pa.DataType | None) -> tuple[Callable[[Any], bytes], str]:
        """The encoding of one value of the column's `arrow_type`, and the schema's description for messages;
        None when the type is not known, which is an error if the schema would be derived from it."""
        encode, what, _, _ = self._encoding(arrow_type)
        return encode, what

    def _encoding(self, arrow_type: pa.DataType | None) -> tuple[Callable[[Any], bytes], str, PayloadEncoder, bytes]:
        """`encoder`'s two, the payload encoder, and the framing written before each payload (b"" when plain)."""
        side = self.side
        if side is not None:
            assert self.registry is not None
            fmt = side.format
            if side.derived is None and not side.use_latest and fmt.schema_id is None and fmt.version is None:
                side = with_derived(side, _known(arrow_type, self.function), side.write_id)
            writer = subject_writer(side, self.registry, "")
            assert writer.schema.id is not None
            return writer.framed, writer.describe(), writer.encoder, frame(writer.schema.id, b"")
        schema = self.inline or derived_schema(self.format, _known(arrow_type, self.function))
        encoder = encoder_for(self.format, schema, self.source or InlineSource(schema), self.message_name)
        fmt_name = self.format

        def encode(value: Any) -> bytes:
            return encode_value(fmt_name, encoder, value)[1]

        what = "the schema given" if self.inline is not None else "the schema derived from the column type"
        return encode, what, encoder, b""

    def values(self, column: pa.Array) -> pa.Array:
        """The column's values encoded (null stays null); PayloadError naming what does not fit. Avro is encoded
        column-wise (`avro.column_encode`), the rows it leaves per record."""
        from kafka_spark.formats.avro.codec import AvroEncoder
        from kafka_spark.formats.avro.column_encode import block_write_on, encode_column, fill

        encode, what, encoder, head = self._encoding(column.type)
        done = None
        if isinstance(encoder, AvroEncoder) and block_write_on():
            done = encode_column(column, *encoder.parsed_writer(), head)
        if done is None:
            return pa.array(self._each(encode, what, column.to_pylist()), pa.binary())
        datums, left = done
        if not len(left):
            return datums
        payloads = self._each(encode, what, column.take(pa.array(left)).to_pylist())
        return fill(datums, left, [p for p in payloads if p is not None])

    def _each(self, encode: Callable[[Any], bytes], what: str, values: list[Any]) -> list[bytes | None]:
        """`values` encoded one by one (None stays None); the first that does not fit raises."""
        out: list[bytes | None] = []
        for value in values:
            try:
                out.append(None if value is None else encode(value))
            except PayloadError as exc:
                raise PayloadError(f"{self.function}: a value does not fit {what}: {exc}") from None
        return out

    def one(self, value: Any) -> bytes:
        """One value encoded, for a row-at-a-time UDF."""
        encode, what = self.encoder(None)
        try:
            return encode(value)
        except PayloadError as exc:
            raise PayloadError(f"{self.function}: a value does not fit {what}: {exc}") from None

    def column(self, data: ColumnOrName) -> Column:
        return _udf(self.function, self.values, "binary", data, self.one)


def _known(arrow_type: pa.DataType | None, function: str) -> pa.DataType:
    if arrow_type is None:
        raise ConfigError(f"{function} on PySpark 4.0 cannot derive a schema from the column type: give the schema, "
                          "or write with the subject's latest one (use.latest.version=true)")
    return arrow_type


def _udf(name: str, run: Callable[[pa.Array], pa.Array], return_type: str, data: ColumnOrName,
         encode_one: Callable[[Any], bytes | None] | None = None) -> Column:
    """`run` over `data` as a column of `return_type`: an Arrow UDF (PySpark 4.1+), else a row-at-a-time UDF
    (decoding through `run`, encoding through `encode_one`)."""
    from pyspark.sql import functions

    arrow_udf: Any = getattr(functions, "arrow_udf", None)  # PySpark 4.1+
    if arrow_udf is None:
        return _row_udf(name, run, return_type, data, encode_one)

    def apply(column: pa.Array) -> pa.Array:
        return run(column)

    apply.__name__ = apply.__qualname__ = name
    column: Column = arrow_udf(apply, return_type)(data)
    return column


def _row_udf(name: str, run: Callable[[pa.Array], pa.Array], return_type: str, data: ColumnOrName,
             encode_one: Callable[[Any], bytes | None] | None) -> Column:
    """PySpark 4.0 has no Arrow UDF, and its Arrow-optimised UDFs need pandas: one Python call per row."""
    from pyspark.sql.functions import udf

    if encode_one is not None:
        def apply(value: Any) -> Any:
            return None if value is None else encode_one(_plain(value))
    else:
        def apply(value: Any) -> Any:
            if value is None:
                return None
            return run(pa.array([bytes(value)], pa.binary())).to_pylist(maps_as_pydicts="strict")[0]

    apply.__name__ = apply.__qualname__ = name
    return udf(apply, return_type)(data)


def _plain(value: Any) -> Any:
    """A row-at-a-time UDF's argument in the forms the encoders take: structs (Rows) and maps as dicts, timestamps
    (local and naive, as PySpark hands them over) with their time zone."""
    from pyspark.sql import Row

    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return value.astimezone(datetime.timezone.utc)
    return value
