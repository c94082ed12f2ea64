"""The Spark engine: a graph runs as one Structured Streaming query on PySpark."""
from flamespark.engines.spark.query import run_spark

__all__ = ["run_spark"]
