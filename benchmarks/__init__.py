"""FlameSpark's internal benchmarks: not installed with it, run from the root of a checkout.

    python benchmarks/core.py DOCS.jsonl     # the local engine against plain Python, paced and overloaded
    python benchmarks/rates.py DUMP          # both modes at several rates, each replayed in real time
    python benchmarks/windows_local.py       # windowed counts on the local engine against a floor and Bytewax
    python benchmarks/running_sum.py         # running sums through a user update, against a floor and Bytewax
    python benchmarks/windows_vs_spark.py    # windowed counts on Spark against Spark's own windowed aggregation
    python benchmarks/dataframes_vs_run.py   # a windowed count through flamespark.spark.stream against flamespark.run
    python benchmarks/levels.py              # several reorder latencies against one each
    python benchmarks/sorters.py --quick     # the Impatience sorter against a heap and sort-then-merge buffers
    python benchmarks/overhead.py            # FlameSpark on Spark against an order-ignorant stateful query
    python benchmarks/state.py               # a micro-batch's cost on Spark against the state held
    python benchmarks/kafka_vs_files.py BROKER index WIKI.jsonl    # Kafka in and out against files
    python benchmarks/kafka_sources.py BROKER TOPIC python         # Spark's Kafka connector or FlameSpark's source

Each script's `--help` says what it measures (docs/benchmarks.md has their latest figures); `flamespark bench`
compares the two modes on a user's pipeline. A script run so finds this checkout's packages through
`_checkout.py`; the helpers they share are in `benchmarks.lib`.
"""
