"""`format("pykafka-log")`: Kafka's segment files read straight off disk or an object store: options, the
driver's plan (one task per segment or index-aligned slice), the tasks' reader and where the files live."""
