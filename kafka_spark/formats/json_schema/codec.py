"""JSON Schema payloads to Arrow values (the mapping is in json_schema_types), validated against the writer's
registered schema as Confluent's deserializer does, and values back to validated JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from jsonschema import exceptions as jsonschema_errors  # type: ignore[import-untyped]
from jsonschema.protocols import Validator  # type: ignore[import-untyped]
from jsonschema.validators import validator_for  # type: ignore[import-untyped]
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.cache import WriterCache
from kafka_spark.formats.json_schema.types import JsonType, json_text, json_type
from kafka_spark.formats.model import RegisteredSchema, SchemaSource, find_writer

OPTION_DEFAULTS: dict[str, str] = {"validate": "true"}
# The draft a schema without `$schema` is read as when it is referenced (Confluent's serializers use it too).
_REFERENCED_DRAFT = DRAFT7


def json_schema_options(options: Mapping[str, str] | None) -> bool:
    """Whether to validate, from the options (`validate`, default true); ConfigError for others."""
    given = {k.lower(): str(v).strip().lower() for k, v in (options or {}).items()}
    unknown = sorted(set(given) - set(OPTION_DEFAULTS))
    if unknown:
        raise ConfigError(f"unknown JSON Schema option(s) {unknown}; known: {sorted(OPTION_DEFAULTS)}")
    validate = given.get("validate", OPTION_DEFAULTS["validate"])
    if validate not in ("true", "false"):
        raise ConfigError(f"JSON Schema option validate must be true or false, not {validate!r}")
    return validate == "true"


class _Parsed:
    """A registered schema parsed, with the schemas it references (recursively) by their `$ref` URLs."""

    def __init__(self, schema: RegisteredSchema, source: SchemaSource) -> None:
        if schema.schema_type != "JSON":
            raise ConfigError(f"schema {schema.label} is {schema.schema_type}, not JSON")
        self.schema = schema
        self.root = _loads_schema(schema.schema, schema.label)
        self.documents: dict[str, Any] = {}
        self._collect(schema, source, ())

    def _collect(self, schema: RegisteredSchema, source: SchemaSource, chain: tuple[str, ...]) -> None:
        for reference in schema.references:
            if reference.name in self.documents:
                continue
            if reference.name in chain:
                raise ConfigError(f"JSON Schema references form a cycle at {reference.name!r}")
            referenced = source.by_reference(reference)
            self.documents[reference.name] = _loads_schema(
                referenced.schema, f"{reference.name!r} ({reference.subject} v{reference.version})")
            self._collect(referenced, source, (*chain, reference.name))

    def mapping(self) -> JsonType:
        try:
            return json_type(self.root, self.documents)
        except RecursionError:
            raise ConfigError(f"JSON Schema {self.schema.label} nests too deeply to map to a column type") from None

    def validator(self) -> Validator:
        registry: Registry = Registry()
        for name, document in self.documents.items():
            registry = registry.with_resource(name, Resource.from_contents(
                document, default_specification=_REFERENCED_DRAFT))
        cls = validator_for(self.root)
        try:
            cls.check_schema(self.root)
        except jsonschema_errors.SchemaError as exc:
            raise ConfigError(f"JSON Schema {self.schema.label} is not a valid schema: {exc.message}") from exc
        except RecursionError:
            raise ConfigError(f"JSON Schema {self.schema.label} nests too deeply to check") from None
        return cls(self.root, registry=registry)


def _loads_schema(text: str, label: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"JSON Schema {label} is not JSON: {exc}") from exc


def _check(validator: Validator, value: Any, what: str) -> None:
    error = jsonschema_errors.best_match(validator.iter_errors(value))
    if error is not None:
        raise PayloadError(f"{what} does not validate at {error.json_path}: {error.message}")


class JsonSchemaDecoder:
    """Decodes JSON payloads into the reader schema's values, validating them against their writer's schema."""

    def __init__(self, reader: RegisteredSchema, source: SchemaSource, validate: bool) -> None:
        self._source = source
        self._validate = validate
        mapping = _Parsed(reader, source).mapping()
        self.mapping: JsonType = mapping  # the reader schema's column type and converters
        self.arrow_type: pa.DataType = mapping.arrow_type
        self._convert = mapping.to_arrow
        self._validators = WriterCache(self._validator)

    @property
    def validates(self) -> bool:
        """Whether payloads are validated against their writer's schema (option `validate`)."""
        return self._validate

    def decode(self, schema_id: int, indexes: tuple[int, ...], payload: bytes) -> Any:
        """One payload as a value of `arrow_type`; PayloadError naming the JSON path of what does not fit."""
        validator = (self._validators.ready.get(schema_id) or self._validators(schema_id)) if self._validate else None
        try:
            value = json.loads(payload)
        except (ValueError, RecursionError) as exc:
            raise PayloadError(f"payload is not JSON: {exc}") from None
        if validator is not None:
            try:
                _check(validator, value, f"JSON written with schema id {schema_id}")
            except RecursionError:
                raise PayloadError("JSON payload nests too deeply to validate") from None
        try:
            return self._convert(value, "$")
        except RecursionError:
            # free-form parts are kept as JSON text, written from deeper in the stack than they were read: a
            # nesting that json.loads took can be one json.dumps cannot
            raise PayloadError("JSON payload nests too deeply to convert to the column type") from None

    def _validator(self, schema_id: int) -> Validator:
        """The writer schema's validator; PayloadError (kept, so a bad id asks the registry once) when there is
        none."""
        writer = find_writer(self._source, schema_id)
        if writer is None:
            raise PayloadError(f"schema id {schema_id} is not in the registry")
        if writer.schema_type != "JSON":
            raise PayloadError(f"schema id {schema_id} is {writer.schema_type}, not JSON")
        try:
            return _Parsed(writer, self._source).validator()
        except ConfigError as exc:
            raise PayloadError(f"writer schema id {schema_id}: {exc}") from None


class JsonSchemaEncoder:
    """Encodes values of the writer schema's column type as compact JSON, validated against that schema."""

    def __init__(self, writer: RegisteredSchema, source: SchemaSource, validate: bool) -> None:
        self.schema = writer
        parsed = _Parsed(writer, source)
        self._to_json = parsed.mapping().to_json
        self._validator = parsed.validator() if validate else None

    def encode(self, value: Any) -> tuple[tuple[int, ...], bytes]:
        """((), payload) of one value; PayloadError when it does not fit or does not validate."""
        try:
            document = self._to_json(value, "$")
            if self._validator is not None:
                _check(self._validator, document, "value")
            return (), json_text(document).encode()
        except ValueError as exc:
            raise PayloadError(f"value has no JSON form: {exc}") from exc
        except RecursionError:
            raise PayloadError("value nests too deeply to write as JSON") from None


def json_schema_decoder(reader: RegisteredSchema, source: SchemaSource,
                        options: Mapping[str, str] | None = None) -> JsonSchemaDecoder:
    """A decoder into the reader schema's column type; option `validate` (default true) validates every
    payload against its writer's schema. ConfigError for a bad schema or option."""
    return JsonSchemaDecoder(reader, source, json_schema_options(options))


def json_schema_encoder(writer: RegisteredSchema, source: SchemaSource,
                        options: Mapping[str, str] | None = None) -> JsonSchemaEncoder:
    """An encoder with the writer schema; option `validate` (default true) as for the decoder."""
    return JsonSchemaEncoder(writer, source, json_schema_options(options))
