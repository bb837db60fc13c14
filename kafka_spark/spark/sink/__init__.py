"""`write.format("pykafka")` and `writeStream.format("pykafka")`: Spark's Kafka-sink options and columns, the
tasks' rows into the producer, and exactly-once writes through Kafka transactions."""
