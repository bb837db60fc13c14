"""The only network layer: connections, TLS/SASL, metadata, fetch, offsets, groups, producer."""
