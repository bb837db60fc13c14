"""`format("pykafka")` read from brokers: options, planning (batch and micro-batch), the tasks' partitions and
reader, the stream with Spark's admission control, decoded payloads, progress, and the direct writer's options.

The DataSource class that Spark registers is `kafka_spark.spark.datasource.KafkaDataSource`.
"""
