"""JoinGroup (key 11): join a classic consumer group; the leader receives every member's metadata."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    11,
    "JoinGroup",
    "0-9",
    flexible="6+",
    request=[
        F("group_id", "string"),
        F("session_timeout_ms", "int32"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1),
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string"),
        A("protocols", "0+", [
            F("name", "string"),
            # a ConsumerProtocolSubscription for protocol type "consumer"
            F("metadata", "bytes"),
        ]),
        F("reason", "string", "8+", nullable="8+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F("error_code", "int16"),
        F("generation_id", "int32", default=-1),
        F("protocol_type", "string", "7+", nullable="7+", default=None),
        F("protocol_name", "string", nullable="7+"),
        F("leader", "string"),
        F("skip_assignment", "bool", "9+"),
        F("member_id", "string"),
        A("members", "0+", [
            F("member_id", "string"),
            F("group_instance_id", "string", "5+", nullable="5+", default=None),
            F("metadata", "bytes"),
        ]),
    ],
)
