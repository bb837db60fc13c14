"""ListGroups (key 16): the groups a broker coordinates, optionally filtered by state and type."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    16,
    "ListGroups",
    "0-5",
    flexible="3+",
    request=[
        F("states_filter", "[]string", "4+"),
        F("types_filter", "[]string", "5+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        A("groups", "0+", [
            F("group_id", "string"),
            F("protocol_type", "string"),
            F("group_state", "string", "4+"),
            F("group_type", "string", "5+"),
        ]),
    ],
)
