"""Metadata (key 3): brokers, controller, topics, partition leaders and replicas."""

from kafka_spark.protocol.schema import A, F, api

_NO_OPERATIONS = -(2**31)

API = api(
    3,
    "Metadata",
    "0-13",
    flexible="9+",
    request=[
        # v0: an empty list means all topics; v1+: null means all topics, empty means none
        A("topics", "0+", [
            F("topic_id", "uuid", "10+"),
            F("name", "string", nullable="10+"),
        ], nullable="1+"),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        F("include_cluster_authorized_operations", "bool", "8-10"),
        F("include_topic_authorized_operations", "bool", "8+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        A("brokers", "0+", [
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", "1+", nullable="1+", default=None),
        ]),
        F("cluster_id", "string", "2+", nullable="2+", default=None),
        F("controller_id", "int32", "1+", default=-1),
        A("topics", "0+", [
            F("error_code", "int16"),
            F("name", "string", nullable="12+"),
            F("topic_id", "uuid", "10+"),
            F("is_internal", "bool", "1+"),
            A("partitions", "0+", [
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", "7+", default=-1),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("offline_replicas", "[]int32", "5+"),
            ]),
            F("topic_authorized_operations", "int32", "8+", default=_NO_OPERATIONS),
        ]),
        F("cluster_authorized_operations", "int32", "8-10", default=_NO_OPERATIONS),
        # KIP-1102: a top-level error such as REBOOTSTRAP_REQUIRED
        F("error_code", "int16", "13+"),
    ],
)
