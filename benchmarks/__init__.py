"""FlameSpark's internal benchmarks: not installed with it, run from a checkout.

    python benchmarks/core.py DOCS.jsonl     # the local engine against plain Python, paced and overloaded
    python benchmarks/sorters.py --quick     # the Impatience sorter against a heap and sort-then-merge buffers
    python benchmarks/overhead.py            # FlameSpark on Spark against an order-ignorant stateful query
    python benchmarks/state.py               # a micro-batch's cost on Spark against the state held

Each script's `--help` says what it measures; `flamespark bench` compares the two modes on a user's pipeline.
"""
