"""TxnOffsetCommit (key 28): store a consumer group's offsets inside a transaction (visible at its commit)."""

from kafka_spark.protocol.schema import A, F, api

API = api(
    28,
    "TxnOffsetCommit",
    "0-5",
    flexible="3+",
    request=[
        F("transactional_id", "string"),
        F("group_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        # group membership (KIP-447); -1 / "" / null commit for a group without joining it
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        A("topics", "0+", [
            F("name", "string"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "2+", default=-1),
                F("committed_metadata", "string", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        A("topics", "0+", [
            F("name", "string"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ],
)
