"""DeleteTopics (key 20): delete topics by name, or (v6+) by name or id."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    20,
    "DeleteTopics",
    "0-6",
    flexible="4+",
    request=[
        A("topics", "6+", [
            F("name", "string", nullable="0+", default=None),
            F("topic_id", "uuid"),
        ]),
        F("topic_names", "[]string", "0-5"),
        F("timeout_ms", "int32"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        A("responses", "0+", [
            F("name", "string", nullable="6+"),
            F("topic_id", "uuid", "6+"),
            F("error_code", "int16"),
            F("error_message", "string", "5+", nullable="5+", default=None),
        ]),
    ],
)
