"""DescribeGroups (key 15): state, protocol and members of classic groups."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    15,
    "DescribeGroups",
    "0-6",
    flexible="5+",
    request=[
        F("groups", "[]string"),
        F("include_authorized_operations", "bool", "3+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        A("groups", "0+", [
            F("error_code", "int16"),
            F("error_message", "string", "6+", nullable="6+", default=None),
            F("group_id", "string"),
            F("group_state", "string"),
            F("protocol_type", "string"),
            F("protocol_data", "string"),
            A("members", "0+", [
                F("member_id", "string"),
                F("group_instance_id", "string", "4+", nullable="4+", default=None),
                F("client_id", "string"),
                F("client_host", "string"),
                F("member_metadata", "bytes"),
                F("member_assignment", "bytes"),
            ]),
            F("authorized_operations", "int32", "3+", default=-(2**31)),
        ]),
    ],
)
