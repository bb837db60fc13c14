"""CreateTopics (key 19): create topics with a partition count and replication or an explicit assignment."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    19,
    "CreateTopics",
    "0-7",
    flexible="5+",
    request=[
        A("topics", "0+", [
            F("name", "string"),
            # -1 (v4+) uses the broker default
            F("num_partitions", "int32"),
            F("replication_factor", "int16"),
            A("assignments", "0+", [
                F("partition_index", "int32"),
                F("broker_ids", "[]int32"),
            ]),
            A("configs", "0+", [
                F("name", "string"),
                F("value", "string", nullable="0+"),
            ]),
        ]),
        F("timeout_ms", "int32", default=60000),
        F("validate_only", "bool", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        A("topics", "0+", [
            F("name", "string"),
            F("topic_id", "uuid", "7+"),
            F("error_code", "int16"),
            F("error_message", "string", "1+", nullable="0+"),
            F("topic_config_error_code", "int16", "5+", tag=0),
            F("num_partitions", "int32", "5+", default=-1),
            F("replication_factor", "int16", "5+", default=-1),
            A("configs", "5+", [
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("read_only", "bool"),
                F("config_source", "int8", default=-1),
                F("is_sensitive", "bool"),
            ], nullable="5+"),
        ]),
    ],
)
