"""The load and stream applications: configuration, runners, stops and the demo feed.

`kafka-spark load` / `kafka-spark stream` and the spark-submit files in `jobs/` run the same code:
`load.main(argv)` and `stream.main(argv)`. Importing this package does not import PySpark.
"""
