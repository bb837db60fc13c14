"""SaslHandshake (key 17): pick a SASL mechanism; v0 then exchanges raw tokens, v1 uses SaslAuthenticate."""

from kafka_spark.protocol.schema import F, api

API = api(
    17,
    "SaslHandshake",
    "0-1",
    flexible=None,
    request=[
        F("mechanism", "string"),
    ],
    response=[
        F("error_code", "int16"),
        F("mechanisms", "[]string"),
    ],
)
