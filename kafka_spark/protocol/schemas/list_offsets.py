"""ListOffsets (key 2): offsets by timestamp (-1 latest, -2 earliest, -3 max timestamp, ...)."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    2,
    "ListOffsets",
    "0-10",
    flexible="6+",
    request=[
        # the wire default is 0, but only a follower broker may send its id; clients send -1
        F("replica_id", "int32", default=-1),
        F("isolation_level", "int8", "2+"),
        A("topics", "0+", [
            F("name", "string"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("current_leader_epoch", "int32", "4+", default=-1),
                F("timestamp", "int64"),
                F("max_num_offsets", "int32", "0", default=1),
            ]),
        ]),
        # the wire default is 0, which would time out remote (tiered) lookups at once
        F("timeout_ms", "int32", "10+", default=30000),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        A("topics", "0+", [
            F("name", "string"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("old_style_offsets", "[]int64", "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            ]),
        ]),
    ],
)
