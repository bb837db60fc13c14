"""OffsetFetch (key 9): read a group's committed offsets; v8+ batches several groups."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    9,
    "OffsetFetch",
    "0-9",
    flexible="6+",
    request=[
        F("group_id", "string", "0-7"),
        # null (v2+) asks for every partition the group has committed
        A("topics", "0-7", [
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ], nullable="2-7"),
        A("groups", "8+", [
            F("group_id", "string"),
            F("member_id", "string", "9+", nullable="9+", default=None),
            F("member_epoch", "int32", "9+", default=-1),
            A("topics", "8+", [
                F("name", "string"),
                F("partition_indexes", "[]int32"),
            ], nullable="8+"),
        ]),
        F("require_stable", "bool", "7+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        A("topics", "0-7", [
            F("name", "string"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "5-7", default=-1),
                F("metadata", "string", nullable="0+"),
                F("error_code", "int16"),
            ]),
        ]),
        F("error_code", "int16", "2-7"),
        A("groups", "8+", [
            F("group_id", "string"),
            A("topics", "8+", [
                F("name", "string"),
                A("partitions", "8+", [
                    F("partition_index", "int32"),
                    F("committed_offset", "int64"),
                    F("committed_leader_epoch", "int32", default=-1),
                    F("metadata", "string", nullable="0+"),
                    F("error_code", "int16"),
                ]),
            ]),
            F("error_code", "int16", "8+"),
        ]),
    ],
)
