"""Column functions for Avro, Protobuf and JSON Schema payloads in any DataFrame column, with the signatures and
options of Databricks' `from_avro` / `to_avro` / `from_protobuf` / `to_protobuf`, reading and writing
Confluent's wire format through a schema registry or plain payloads with a schema given inline:

    from kafka_spark.functions import from_avro
    df.select(from_avro("value", subject="orders-value", schemaRegistryAddress="http://registry:8081"))

Names load on first use, so importing this module does not import Spark.
"""

from __future__ import annotations

from kafka_spark.lazy import lazy_exports

_EXPORTS = {name: "kafka_spark.spark.functions" for name in (
    "from_avro", "to_avro", "from_protobuf", "to_protobuf", "from_json_schema", "to_json_schema")}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
