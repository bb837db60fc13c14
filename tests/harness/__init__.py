"""Servers and tools only the tests and benchmarks use, kept out of the installed package: a fault-injecting
proxy, a 3-node Kafka cluster, an S3-compatible server (moto), a Spark standalone cluster, an MIT Kerberos KDC
and its broker, an OAuth 2 server and its broker, Kafka 3.9 with ZooKeeper, and the fetch of their jars (`fetch`,
which the tests' set-up runs)."""
