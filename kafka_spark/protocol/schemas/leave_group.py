"""LeaveGroup (key 13): leave a classic group; v3+ removes several members in one request."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    13,
    "LeaveGroup",
    "0-5",
    flexible="4+",
    request=[
        F("group_id", "string"),
        F("member_id", "string", "0-2"),
        A("members", "3+", [
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="0+", default=None),
            F("reason", "string", "5+", nullable="5+", default=None),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        A("members", "3+", [
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="0+"),
            F("error_code", "int16"),
        ]),
    ],
)
