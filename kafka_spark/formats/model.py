"""Registered schemas, where they come from, and the decoder/encoder contract every payload format keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.errors import SchemaRegistryError

SchemaType = Literal["AVRO", "PROTOBUF", "JSON"]
# The names users give (`valueFormat`, `--value-format`) -> the registry's schemaType.
FORMAT_TYPES: dict[str, SchemaType] = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}


@dataclass(frozen=True)
class SchemaReference:
    """A schema another one imports: its name inside the referring schema (an Avro full name, a .proto
    import path, a JSON Schema `$ref` URL) and where the registry keeps it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it; `id`, `subject` and `version` are None when not known (a schema
    given inline, or one looked up by id alone)."""

    schema: str
    schema_type: SchemaType = "AVRO"
    references: tuple[SchemaReference, ...] = ()
    id: int | None = None
    subject: str | None = None
    version: int | None = None

    @property
    def label(self) -> str:
        """`id 7`, `orders-value v3` or `(given inline)`, for messages."""
        if self.id is not None:
            return f"id {self.id}"
        if self.subject is not None:
            return f"{self.subject} v{self.version}"
        return "(given inline)"


class SchemaSource(Protocol):
    """Where decoders and encoders find writer schemas and the schemas a schema references."""

    def by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema registered under `schema_id`; SchemaRegistryError(error_code=40403) when there is none."""
        ...

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        """The schema at `reference.subject`, version `reference.version`."""
        ...


# The registry's answers for a subject, version or schema it does not have.
NOT_FOUND = (40401, 40402, 40403)


def find_writer(source: SchemaSource, schema_id: int) -> RegisteredSchema | None:
    """The writer schema registered under `schema_id`, None when the registry has none (other failures raise)."""
    from kafka_spark.errors import SchemaRegistryError

    try:
        return source.by_id(schema_id)
    except SchemaRegistryError as exc:
        if is_not_found(exc):
            return None
        raise


def is_not_found(exc: SchemaRegistryError) -> bool:
    """Whether the registry answered that it has no such schema, subject or version (a 404), rather than failed."""
    return exc.error_code in NOT_FOUND or (exc.error_code is None and exc.status == 404)


class PayloadDecoder(Protocol):
    """Decodes payloads written with any schema id into values of one reader (query) schema's type."""

    # The column's type: what `decode` returns must build with `pa.array(values, type=arrow_type)`.
    arrow_type: pa.DataType

    def decode(self, schema_id: int, indexes: tuple[int, ...], payload: bytes) -> Any:
        """One payload (framing already removed; `indexes` are Protobuf's message indexes, () otherwise) as a
        Python value of `arrow_type`; PayloadError naming the reason when it cannot."""
        ...


class PayloadEncoder(Protocol):
    """Encodes values of a column's Arrow type with one registered writer schema."""

    schema: RegisteredSchema

    def encode(self, value: Any) -> tuple[tuple[int, ...], bytes]:
        """(message indexes, payload) for one value as `pa.Array.to_pylist()` gives it; the indexes are ()
        except for Protobuf. PayloadError when the value does not fit the schema."""
        ...
