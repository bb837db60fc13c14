"""EndTxn (key 26): commit or abort a transaction at its coordinator."""

from kafka_spark.protocol.schema import F, api

API = api(
    26,
    "EndTxn",
    "0-5",
    flexible="3+",
    request=[
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("committed", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        # v5 (transactions v2) bumps the epoch at every end and answers with the new one
        F("producer_id", "int64", "5+", default=-1),
        F("producer_epoch", "int16", "5+", default=-1),
    ],
)
