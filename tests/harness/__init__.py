"""Servers and tools only the tests and benchmarks use, kept out of the installed package: a fault-injecting
proxy, a 3-node Kafka cluster, an S3-compatible server (moto) and a Spark standalone cluster."""
