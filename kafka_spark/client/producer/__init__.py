"""The producer: per-partition batches laid out with numpy, the Java partitioner (murmur2), the sender thread with
requests in flight, the idempotent producer's sequences, and transactions."""
