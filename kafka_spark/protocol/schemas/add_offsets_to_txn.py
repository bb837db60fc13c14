"""AddOffsetsToTxn (key 25): make a consumer group's offset commits part of a transaction."""

from kafka_spark.protocol.schema import F, api

API = api(
    25,
    "AddOffsetsToTxn",
    "0-4",
    flexible="3+",
    request=[
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("group_id", "string"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
    ],
)
