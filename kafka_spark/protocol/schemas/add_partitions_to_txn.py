"""AddPartitionsToTxn (key 24): tell the transaction coordinator which partitions a transaction writes to.

Clients speak v0-3 (one transaction per request); v4+ batches several transactions and is what brokers
send each other to verify a partition is part of a transaction.
"""

from kafka_spark.protocol.schema import A, F, api

# Each topic and the partitions of it that join the transaction.
_TOPICS = [
    F("name", "string"),
    F("partitions", "[]int32"),
]

_PARTITION_RESULTS = [
    F("name", "string"),
    A("results_by_partition", "0+", [
        F("partition_index", "int32"),
        F("partition_error_code", "int16"),
    ]),
]

API = api(
    24,
    "AddPartitionsToTxn",
    "0-5",
    flexible="3+",
    request=[
        A("transactions", "4+", [
            F("transactional_id", "string"),
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("verify_only", "bool"),
            A("topics", "0+", _TOPICS),
        ]),
        F("transactional_id", "string", "0-3"),
        F("producer_id", "int64", "0-3"),
        F("producer_epoch", "int16", "0-3"),
        A("topics", "0-3", _TOPICS),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "4+"),
        A("results_by_transaction", "4+", [
            F("transactional_id", "string"),
            A("topic_results", "0+", _PARTITION_RESULTS),
        ]),
        A("results_by_topic", "0-3", _PARTITION_RESULTS),
    ],
)
