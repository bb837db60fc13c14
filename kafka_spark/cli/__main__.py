"""`python -m kafka_spark.cli`: the `kafka-spark` command."""

import sys

from kafka_spark.cli.main import main

sys.exit(main())
