"""Build kafka-python message objects from our values, so both codecs can be compared byte for byte."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

# kafka-python reads its bundled specs with a deprecated importlib API when first imported
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.admin import (
        CreateTopicsRequest,
        CreateTopicsResponse,
        DeleteTopicsRequest,
        DeleteTopicsResponse,
        DescribeGroupsRequest,
        DescribeGroupsResponse,
        ListGroupsRequest,
        ListGroupsResponse,
    )
    from kafka.protocol.consumer import (
        FetchRequest,
        FetchResponse,
        HeartbeatRequest,
        HeartbeatResponse,
        JoinGroupRequest,
        JoinGroupResponse,
        LeaveGroupRequest,
        LeaveGroupResponse,
        ListOffsetsRequest,
        ListOffsetsResponse,
        OffsetCommitRequest,
        OffsetCommitResponse,
        OffsetFetchRequest,
        OffsetFetchResponse,
        SyncGroupRequest,
        SyncGroupResponse,
    )
    from kafka.protocol.metadata import (
        ApiVersionsRequest,
        ApiVersionsResponse,
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        MetadataRequest,
        MetadataResponse,
    )
    from kafka.protocol.producer import (
        AddOffsetsToTxnRequest,
        AddOffsetsToTxnResponse,
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
        EndTxnRequest,
        EndTxnResponse,
        InitProducerIdRequest,
        InitProducerIdResponse,
        ProduceRequest,
        ProduceResponse,
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
    )
    from kafka.protocol.sasl import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )
    from kafka.protocol.schemas.fields.codecs import BitField

from kafka_spark.protocol.schema import Field

CLASSES: dict[int, tuple[type, type]] = {
    0: (ProduceRequest, ProduceResponse),
    1: (FetchRequest, FetchResponse),
    2: (ListOffsetsRequest, ListOffsetsResponse),
    3: (MetadataRequest, MetadataResponse),
    8: (OffsetCommitRequest, OffsetCommitResponse),
    9: (OffsetFetchRequest, OffsetFetchResponse),
    10: (FindCoordinatorRequest, FindCoordinatorResponse),
    11: (JoinGroupRequest, JoinGroupResponse),
    12: (HeartbeatRequest, HeartbeatResponse),
    13: (LeaveGroupRequest, LeaveGroupResponse),
    14: (SyncGroupRequest, SyncGroupResponse),
    15: (DescribeGroupsRequest, DescribeGroupsResponse),
    16: (ListGroupsRequest, ListGroupsResponse),
    17: (SaslHandshakeRequest, SaslHandshakeResponse),
    18: (ApiVersionsRequest, ApiVersionsResponse),
    19: (CreateTopicsRequest, CreateTopicsResponse),
    20: (DeleteTopicsRequest, DeleteTopicsResponse),
    22: (InitProducerIdRequest, InitProducerIdResponse),
    24: (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    25: (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    26: (EndTxnRequest, EndTxnResponse),
    28: (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    36: (SaslAuthenticateRequest, SaslAuthenticateResponse),
}


def oracle_class(api_key: int, kind: str) -> type:
    """kafka-python's class for the request or response of `api_key`."""
    request, response = CLASSES[api_key]
    return request if kind == "request" else response


def max_version(api_key: int) -> int:
    """The highest version kafka-python declares for `api_key`."""
    return CLASSES[api_key][0].max_version


def _tagged(kfield: Any, version: int) -> bool:
    return kfield.tagged_field_q(version)


def _convert(kfield: Any, ours: Field, value: Any, version: int) -> Any:
    if _tagged(kfield, version) and value == ours.default:
        # kafka-python leaves a tagged field out when it equals *its* default
        return kfield.default
    if value is None:
        return None
    if kfield.is_struct():
        return build(kfield, ours.fields, value, version)
    if kfield.is_struct_array():
        return [build(kfield, ours.fields, item, version) for item in value]
    if getattr(kfield, "_type", None) is BitField:
        bits = BitField.from_32_bit_field(value & 0xFFFFFFFF)
        return None if bits == {31} else bits
    if ours.type in ("bytes", "records"):
        return bytes(value)
    return value


def our_name(name: str, ours: Iterable[str]) -> str:
    """Our name for kafka-python's field `name` (it shortens some, e.g. topic_authorized_operations, and
    keeps Kafka's version markers, e.g. v3_and_below_topics, where ours use the plain name)."""
    ours = list(ours)
    plain = name.removeprefix("v3_and_below_").removesuffix("_v3_and_below")
    for candidate in (name, plain):
        if candidate in ours:
            return candidate
    matches = [n for n in ours if n.endswith("_" + name)]
    if len(matches) != 1:
        raise AssertionError(f"kafka-python field {name!r} has no counterpart; ours: {sorted(ours)}")
    return matches[0]


def build(kstruct: Any, fields: tuple[Field, ...], value: dict[str, Any], version: int, cls: Any = None) -> Any:
    """A kafka-python data object holding `value`, field by field (names must match ours)."""
    ours = {f.name: f for f in fields}
    kwargs = {}
    for name, kfield in kstruct.fields.items():
        if not kfield.for_version_q(version):
            continue
        mine = our_name(name, ours)
        kwargs[name] = _convert(kfield, ours[mine], value[mine], version)
    if cls is not None:
        return cls[version](**kwargs)
    return kstruct.data_class(**kwargs)


def oracle_object(api_key: int, version: int, kind: str, fields: tuple[Field, ...], value: dict) -> Any:
    """The kafka-python request or response object for `value`."""
    cls = oracle_class(api_key, kind)
    return build(cls._struct, fields, value, version, cls=cls)
