"""Avro payloads: spark-avro's type mapping to Arrow, the decoder and encoder, and the guards that keep a hostile
schema or datum from the compiled reader."""
