"""Kafka's wire protocol: schemas as data and a sans-I/O codec."""
