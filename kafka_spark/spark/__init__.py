"""PySpark DataSources: pykafka (batch and micro-batch) and pykafka-log (segment files)."""
