"""FlameSpark's overhead on Spark against an order-ignorant stateful query (issue 3).

    python benchmarks/overhead.py [--events N] [--keys K] [--batch-rows R] [--repeat 2] [--out report.json]

or `benchmark.benchmark(settings.Settings(events=..., keys=..., ...))`, which returns the report.

Both queries count events per key, one output per event, on one SparkSession:

A. FlameSpark: `source("events").stateful(key, count).sink("counts")` through
   `flamespark.run(engine="spark")`: ingest in the replay source's read tasks,
   then one keyed stage holding the barrier, one `transformWithStateInPandas`
   operator, exact in event-time order.
B. What a Spark user writes when order does not matter: the same replay file
   through the same replay source (same micro-batches), a `mapInArrow` that
   decodes the msgpack payload to its key, then `groupBy(key)` and one
   `transformWithStateInPandas` keeping the key's count in a ValueState
   (baseline "key", the default), or `groupBy(shard)` with one msgpack dict
   per shard like FlameSpark keeps (baseline "shard"); counts in arrival
   order; each micro-batch collected once and written to a part file.

A and B run alternately `repeat` times after a small warm-up run of each
(a few micro-batches, not charged to either);
the report has every run, the medians and the ratio A/B of query wall time
(goal: at most 1.1), and where the time goes per stateful operator, from
Spark's own progress reports.

Modules: `settings` (what to run), `workload` (the input and query A),
`baseline` (query B), `query_reports` (Spark's progress reports and the time
split), `benchmark` (the runs) and `report` (ratio, checks, table); the
command line is `benchmarks/overhead.py`.
"""
