"""FlameSpark inside a PySpark pipeline: streaming DataFrames in, one streaming DataFrame out.

`stream(graph, {source: DataFrame}, event_time=..., reorder_latency=...)`
runs a graph as a transformation of the user's own DataFrames, whatever
Spark reads them from; its result is written wherever Spark writes, and
`payloads(out, sink, schema)` gives one sink's outputs as typed columns.
The graph's stages, its barrier and their state run in the user's query, so
its checkpoint resumes them. See docs/dataframes.md.

Importing `flamespark` does not import this package (nor PySpark).
"""
from flamespark.spark.frames import payloads, stream

__all__ = ["payloads", "stream"]
