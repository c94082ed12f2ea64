"""The Spark engine: a graph runs as one Structured Streaming query on PySpark (`query.run_spark`).

The package imports nothing itself: Spark's Python workers import it to unpickle the processors, and need
neither the driver's query nor its collector.
"""
