"""ApiVersions (key 18): the version range the broker serves for every API key.

Its response always uses response header v0, so a client can read it before it knows whether the
broker understands flexible headers.
"""

from kafka_spark.protocol.schema import A, F, api

API = api(
    18,
    "ApiVersions",
    "0-4",
    flexible="3+",
    request=[
        F("client_software_name", "string", "3+"),
        F("client_software_version", "string", "3+"),
    ],
    response=[
        F("error_code", "int16"),
        A("api_keys", "0+", [
            F("api_key", "int16"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        ]),
        F("throttle_time_ms", "int32", "1+"),
        A("supported_features", "3+", [
            F("name", "string"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        ], tag=0),
        F("finalized_features_epoch", "int64", "3+", default=-1, tag=1),
        A("finalized_features", "3+", [
            F("name", "string"),
            F("max_version_level", "int16"),
            F("min_version_level", "int16"),
        ], tag=2),
        F("zk_migration_ready", "bool", "3+", tag=3),
    ],
)
