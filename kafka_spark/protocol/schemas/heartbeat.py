"""Heartbeat (key 12): keep a classic group membership alive."""

from kafka_spark.protocol.schema import F, api

API = api(
    12,
    "Heartbeat",
    "0-4",
    flexible="4+",
    request=[
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
    ],
)
