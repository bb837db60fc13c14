"""SaslAuthenticate (key 36): one SASL token exchange framed as a Kafka request (after SaslHandshake v1)."""

from kafka_spark.protocol.schema import F, api

API = api(
    36,
    "SaslAuthenticate",
    "0-2",
    flexible="2+",
    request=[
        F("auth_bytes", "bytes"),
    ],
    response=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("auth_bytes", "bytes"),
        F("session_lifetime_ms", "int64", "1+"),
    ],
)
