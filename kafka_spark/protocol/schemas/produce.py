"""Produce (key 0): append record batches to partitions; v13 addresses topics by id."""

from kafka_spark.protocol.schema import A, F, S, api

API = api(
    0,
    "Produce",
    "0-13",
    flexible="9+",
    request=[
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        # 0: no response at all, 1: leader only, -1: all in-sync replicas; the wire default of 0
        # would silently drop the response, so a body without acks asks for all replicas
        F("acks", "int16", default=-1),
        F("timeout_ms", "int32"),
        A("topic_data", "0+", [
            F("name", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            A("partition_data", "0+", [
                F("index", "int32"),
                F("records", "records", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        A("responses", "0+", [
            F("name", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            A("partition_responses", "0+", [
                F("index", "int32"),
                F("error_code", "int16"),
                F("base_offset", "int64"),
                F("log_append_time_ms", "int64", "2+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                A("record_errors", "8+", [
                    F("batch_index", "int32"),
                    F("batch_index_error_message", "string", nullable="8+", default=None),
                ]),
                F("error_message", "string", "8+", nullable="8+", default=None),
                S("current_leader", "10+", [
                    F("leader_id", "int32", default=-1),
                    F("leader_epoch", "int32", default=-1),
                ], tag=0),
            ]),
        ]),
        F("throttle_time_ms", "int32", "1+"),
        A("node_endpoints", "10+", [
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="0+", default=None),
        ], tag=0),
    ],
)
