"""`python -m kafka_spark`: the `kafka-spark` command."""

import sys

from kafka_spark.cli.main import main

sys.exit(main())
