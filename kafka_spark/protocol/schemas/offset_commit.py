"""OffsetCommit (key 8): store consumed offsets in a consumer group."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    8,
    "OffsetCommit",
    "0-9",
    flexible="8+",
    request=[
        F("group_id", "string"),
        F("generation_id_or_member_epoch", "int32", "1+", default=-1),
        F("member_id", "string", "1+"),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        F("retention_time_ms", "int64", "2-4", default=-1),
        A("topics", "0+", [
            F("name", "string"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "6+", default=-1),
                F("commit_timestamp", "int64", "1", default=-1),
                F("committed_metadata", "string", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        A("topics", "0+", [
            F("name", "string"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ],
)
