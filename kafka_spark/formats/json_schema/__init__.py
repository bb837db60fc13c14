"""JSON Schema payloads: a schema as an Arrow type, and values validated, decoded and encoded."""
