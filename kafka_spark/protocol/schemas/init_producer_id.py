"""InitProducerId (key 22): a producer id and epoch for idempotent or transactional producing."""

from kafka_spark.protocol.schema import F, api

API = api(
    22,
    "InitProducerId",
    "0-5",
    flexible="2+",
    request=[
        F("transactional_id", "string", nullable="0+", default=None),
        F("transaction_timeout_ms", "int32"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", default=-1),
        F("producer_epoch", "int16"),
    ],
)
