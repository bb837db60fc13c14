"""Fetch (key 1): read record data from partition leaders (or followers, KIP-392)."""

from kafka_spark.protocol.schema import A, F, S, api

API = api(
    1,
    "Fetch",
    "0-18",
    flexible="12+",
    request=[
        F("cluster_id", "string", "12+", nullable="12+", default=None, tag=0),
        # -1 for consumers; replaced by the tagged replica_state from v15
        F("replica_id", "int32", "0-14", default=-1),
        S("replica_state", "15+", [
            F("replica_id", "int32", default=-1),
            F("replica_epoch", "int64", default=-1),
        ], tag=1),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
        # 0 read_uncommitted, 1 read_committed
        F("isolation_level", "int8", "4+"),
        F("session_id", "int32", "7+"),
        F("session_epoch", "int32", "7+", default=-1),
        A("topics", "0+", [
            F("topic", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            A("partitions", "0+", [
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "9+", default=-1),
                F("fetch_offset", "int64"),
                F("last_fetched_epoch", "int32", "12+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("partition_max_bytes", "int32"),
                F("replica_directory_id", "uuid", "17+", tag=0),
                F("high_watermark", "int64", "18+", default=0x7FFFFFFFFFFFFFFF, tag=1),
            ]),
        ]),
        A("forgotten_topics_data", "7+", [
            F("topic", "string", "7-12"),
            F("topic_id", "uuid", "13+"),
            F("partitions", "[]int32", "7+"),
        ]),
        F("rack_id", "string", "11+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "7+"),
        F("session_id", "int32", "7+"),
        A("responses", "0+", [
            F("topic", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            A("partitions", "0+", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("high_watermark", "int64"),
                F("last_stable_offset", "int64", "4+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                S("diverging_epoch", "12+", [
                    F("epoch", "int32", default=-1),
                    F("end_offset", "int64", default=-1),
                ], tag=0),
                S("current_leader", "12+", [
                    F("leader_id", "int32", default=-1),
                    F("leader_epoch", "int32", default=-1),
                ], tag=1),
                S("snapshot_id", "12+", [
                    F("end_offset", "int64", default=-1),
                    F("epoch", "int32", default=-1),
                ], tag=2),
                A("aborted_transactions", "4+", [
                    F("producer_id", "int64"),
                    F("first_offset", "int64"),
                ], nullable="4+"),
                F("preferred_read_replica", "int32", "11+", default=-1),
                # stays opaque here: a memoryview slice of the response frame
                F("records", "records", nullable="0+"),
            ]),
        ]),
        A("node_endpoints", "16+", [
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="0+", default=None),
        ], tag=0),
    ],
)
