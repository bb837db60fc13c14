"""Protobuf messages built from the Python values of their `from_protobuf` column type (as
`pa.Array.to_pylist()` gives them) and serialized."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import message_factory  # type: ignore[import-untyped]
from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import EncodeError, Message  # type: ignore[import-untyped]

from kafka_spark.errors import PayloadError
from kafka_spark.formats.protobuf.values import EMPTY_STRUCT_FIELD, is_map, is_time_message

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICRO = datetime.timedelta(microseconds=1)
_UNSIGNED = {FieldDescriptor.TYPE_UINT32: 1 << 32, FieldDescriptor.TYPE_FIXED32: 1 << 32,
             FieldDescriptor.TYPE_UINT64: 1 << 64, FieldDescriptor.TYPE_FIXED64: 1 << 64}

# fill(message, value, path): set the fields of `message` from the dict `value`
Fill = Callable[[Message, Any, str], None]


class MessageWriter:
    """Serializes dicts as one message type; PayloadError names the field a value does not fit."""

    def __init__(self, descriptor: Descriptor) -> None:
        self._class = message_factory.GetMessageClass(descriptor)
        self._name = descriptor.full_name
        self._fills: dict[str, Fill] = {}
        self._fill = self._filler(descriptor)

    def serialize(self, value: Any) -> bytes:
        message = self._class()
        self._fill(message, value, self._name)
        try:
            return message.SerializeToString()
        except EncodeError as exc:
            raise PayloadError(f"{self._name}: {exc}") from exc

    def _filler(self, descriptor: Descriptor) -> Fill:
        # One filler per message type, looked up when first used, so that recursive types terminate.
        name = descriptor.full_name
        if name in self._fills:
            return self._fills[name]
        setters: dict[str, Callable[[Message, Any, str], None]] = {}

        def fill(message: Message, value: Any, path: str) -> None:
            if not isinstance(value, Mapping):
                raise PayloadError(f"{path}: expected a dict for message {name}, got {type(value).__name__}")
            message.SetInParent()
            for key, item in value.items():
                if item is None:
                    continue
                setter = setters.get(key)
                if setter is None:
                    if key == EMPTY_STRUCT_FIELD:
                        continue
                    raise PayloadError(f"{path}: message {name} has no field {key!r}")
                setter(message, item, f"{path}.{key}")

        self._fills[name] = fill
        for field in descriptor.fields:
            setters[field.name] = self._setter(field)
        return fill

    def _setter(self, field: FieldDescriptor) -> Callable[[Message, Any, str], None]:
        name = field.name
        if is_map(field):
            return self._map_setter(field)
        if field.message_type is not None:
            sub = self._sub_filler(field.message_type)
            if field.is_repeated:
                def add_all(message: Message, value: Any, path: str) -> None:
                    container = getattr(message, name)
                    for i, item in enumerate(_sequence(value, path)):
                        sub(container.add(), item, f"{path}[{i}]")
                return _guarded(add_all)

            def set_message(message: Message, value: Any, path: str) -> None:
                sub(getattr(message, name), value, path)
            return _guarded(set_message)
        scalar = _scalar(field)
        if field.is_repeated:
            def extend(message: Message, value: Any, path: str) -> None:
                getattr(message, name).extend([scalar(x, f"{path}[{i}]") for i, x in enumerate(_sequence(value, path))])
            return _guarded(extend)

        def set_scalar(message: Message, value: Any, path: str) -> None:
            setattr(message, name, scalar(value, path))
        return _guarded(set_scalar)

    def _sub_filler(self, descriptor: Descriptor) -> Fill:
        if is_time_message(descriptor, "Timestamp") or is_time_message(descriptor, "Duration"):
            return _set_time
        fills = self._fills

        def fill(message: Message, value: Any, path: str) -> None:
            target = fills.get(descriptor.full_name) or self._filler(descriptor)
            target(message, value, path)
        return fill

    def _map_setter(self, field: FieldDescriptor) -> Callable[[Message, Any, str], None]:
        name = field.name
        key = _scalar(field.message_type.fields_by_name["key"])
        value_field = field.message_type.fields_by_name["value"]
        sub = self._sub_filler(value_field.message_type) if value_field.message_type is not None else None
        scalar = None if sub is not None else _scalar(value_field)

        def put(message: Message, value: Any, path: str) -> None:
            container = getattr(message, name)
            pairs = value.items() if isinstance(value, Mapping) else value
            for pair in _sequence(pairs, path):
                try:
                    k, v = pair
                except (TypeError, ValueError):
                    raise PayloadError(f"{path}: map entries must be (key, value) pairs, got {pair!r}") from None
                entry_path = f"{path}[{k!r}]"
                if k is None:
                    raise PayloadError(f"{entry_path}: a map key cannot be null")
                try:
                    k = key(k, entry_path)
                    if sub is not None:
                        sub(container[k], {} if v is None else v, entry_path)
                    elif v is not None:
                        assert scalar is not None
                        container[k] = scalar(v, entry_path)
                except (TypeError, ValueError, OverflowError) as exc:
                    raise PayloadError(f"{entry_path}: {exc}") from exc
        return _guarded(put)


def _guarded(setter: Callable[[Message, Any, str], None]) -> Callable[[Message, Any, str], None]:
    def guarded(message: Message, value: Any, path: str) -> None:
        try:
            setter(message, value, path)
        except (TypeError, ValueError, OverflowError) as exc:
            raise PayloadError(f"{path}: {exc}") from exc
    return guarded


def _sequence(value: Any, path: str) -> Any:
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise PayloadError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _scalar(field: FieldDescriptor) -> Callable[[Any, str], Any]:
    """The protobuf value of one column value of `field`'s scalar type."""
    if field.type == FieldDescriptor.TYPE_ENUM:
        numbers = {v.name: v.number for v in field.enum_type.values}

        def enum(value: Any, path: str) -> Any:
            if isinstance(value, str):
                if value not in numbers:
                    raise PayloadError(f"{path}: {value!r} is not a value of enum {field.enum_type.full_name}")
                return numbers[value]
            return value
        return enum
    wrap = _UNSIGNED.get(field.type)
    if wrap is not None:
        # Spark's int/long columns hold the unsigned value's bits; an upcast column holds the value itself.
        def unsigned(value: Any, path: str) -> Any:
            if isinstance(value, decimal.Decimal):
                value = int(value)
            return value + wrap if isinstance(value, int) and value < 0 and value >= -(wrap >> 1) else value
        return unsigned
    return lambda value, path: value


def _set_time(message: Message, value: Any, path: str) -> None:
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=datetime.timezone.utc)
        total = (moment - _EPOCH) // _MICRO
    elif isinstance(value, datetime.timedelta):
        total = value // _MICRO
    elif isinstance(value, int) and not isinstance(value, bool):
        total = value
    else:
        raise PayloadError(f"{path}: expected a datetime, timedelta or microseconds, got {type(value).__name__}")
    message.SetInParent()
    # Duration keeps the sign on both parts; Timestamp's nanos are never negative.
    if message.DESCRIPTOR.name == "Duration" and total < 0:
        seconds, rest = -((-total) // 1_000_000), -((-total) % 1_000_000)
    else:
        seconds, rest = divmod(total, 1_000_000)
    message.seconds = seconds
    message.nanos = rest * 1000
