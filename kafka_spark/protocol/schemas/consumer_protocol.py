"""Payloads of the classic "consumer" protocol carried as bytes inside JoinGroup and SyncGroup.

Both are prefixed by an int16 version and are never flexible. Newer versions only append fields,
so a reader decodes a higher version with the newest layout it knows and ignores the rest.
"""

from kafka_spark.protocol.schema import A, F, Message, Versions, parse_versions, validate

VERSIONS = Versions(0, 3)

_TOPIC_PARTITIONS = [
    F("topic", "string"),
    F("partitions", "[]int32"),
]

SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    (
        F("topics", "[]string"),
        F("user_data", "bytes", nullable="0+", default=None),
        A("owned_partitions", "1+", _TOPIC_PARTITIONS),
        F("generation_id", "int32", "2+", default=-1),
        F("rack_id", "string", "3+", nullable="3+", default=None),
    ),
    parse_versions(None),
)

ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    (
        A("assigned_partitions", "0+", _TOPIC_PARTITIONS),
        F("user_data", "bytes", nullable="0+", default=None),
    ),
    parse_versions(None),
)

validate(SUBSCRIPTION.fields, SUBSCRIPTION.flexible, SUBSCRIPTION.name)
validate(ASSIGNMENT.fields, ASSIGNMENT.flexible, ASSIGNMENT.name)
