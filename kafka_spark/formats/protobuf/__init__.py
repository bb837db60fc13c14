"""Protobuf payloads: registered `.proto` schemas as descriptors, Spark's `from_protobuf` mapping to Arrow, the
decoder, and messages built back from column values."""
