"""Spark's and Py4J's exceptions as applications report them: which are expected, and their own text."""

from __future__ import annotations


def spark_error_types() -> tuple[type[BaseException], ...]:
    """PySpark's and Py4J's exception types (none when PySpark is not installed)."""
    try:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
    except ImportError:
        return ()
    return (PySparkException, Py4JJavaError)


def java_text(exc: BaseException) -> str:
    """The text of an exception; for one raised in the JVM, the Java exception's own line."""
    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:
        return str(exc)
    if isinstance(exc, Py4JJavaError):
        return str(exc.java_exception.toString())
    return str(exc)


def schema_changed(exc: BaseException) -> bool:
    """Whether `exc` is SchemaChangedError, or a Spark job's failure whose task raised it (a task's error
    reaches the driver as text only)."""
    from kafka_spark.errors import SchemaChangedError

    return isinstance(exc, SchemaChangedError) or SchemaChangedError.__name__ in f"{exc}\n{java_text(exc)}"
