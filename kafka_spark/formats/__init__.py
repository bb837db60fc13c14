"""Payload formats in Confluent's wire format (Avro, Protobuf, JSON Schema) decoded to Arrow, and the
schema-registry client that supplies their schemas."""
