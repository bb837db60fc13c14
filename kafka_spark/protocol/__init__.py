"""Kafka's wire protocol: schemas as data and a sans-I/O codec.

Typical client use::

    frame = encode_request(ApiKey.METADATA, 12, corr_id, "my-client", {"topics": None})
    ...  # write frame; read the 4-byte size, check it with read_frame_size, read the payload
    corr_id, body = decode_response(ApiKey.METADATA, 12, payload)
"""

from kafka_spark.protocol.api_keys import ApiKey
from kafka_spark.protocol.codec import (
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    expects_response,
    peek_correlation_id,
    read_frame_size,
)
from kafka_spark.protocol.compiler import UNKNOWN_TAGS
from kafka_spark.protocol.consumer import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafka_spark.protocol.headers import RequestHeader, request_header_version, response_header_version
from kafka_spark.protocol.primitives import EncodeError, GatheredFrame
from kafka_spark.protocol.registry import get_api, is_flexible, precompile
from kafka_spark.protocol.versions import (
    LEGACY_BROKER_VERSIONS,
    BrokerVersions,
    api_versions_request,
    parse_api_versions_response,
    pick_version,
    supported_versions,
)

__all__ = [
    "LEGACY_BROKER_VERSIONS",
    "UNKNOWN_TAGS",
    "ApiKey",
    "BrokerVersions",
    "EncodeError",
    "GatheredFrame",
    "RequestHeader",
    "api_versions_request",
    "decode_assignment",
    "decode_body",
    "decode_request",
    "decode_response",
    "decode_subscription",
    "encode_assignment",
    "encode_body",
    "encode_request",
    "encode_response",
    "encode_subscription",
    "expects_response",
    "get_api",
    "is_flexible",
    "parse_api_versions_response",
    "peek_correlation_id",
    "pick_version",
    "precompile",
    "read_frame_size",
    "request_header_version",
    "response_header_version",
    "supported_versions",
]
