"""`flamespark.run`: one entry point for every engine."""
from flamespark.result import Result

ENGINES = ("local", "spark")


def run(graph, inputs, engine="local", mode="optimistic", reorder_latency=0, late="drop",
        punctuate_every=1, **engine_options) -> Result:
    """Run `graph` over `inputs` and return the released outputs.

    `inputs` maps each source name to an iterable of `(ts, payload)` pairs in
    arrival order (`ts` an integer in ms), a JSONL file or a directory of
    JSONL or Parquet files (see flamespark.io.inputs). Events may arrive up to
    `reorder_latency` ms behind the newest event of their source; later ones
    are late and handled by `late` ("drop", "adjust" or "fail"). The local
    engine issues a punctuation every `punctuate_every` events. `mode` is
    "optimistic" or "buffered" (the buffer-and-sort baseline); both release
    the same outputs.
    """
    if engine == "local":
        from flamespark.engines.local import LocalRun

        if engine_options:
            raise TypeError(f"unexpected options for the local engine: {', '.join(engine_options)}")
        return LocalRun(graph, mode, reorder_latency, late, punctuate_every).run(inputs)
    if engine == "spark":
        from flamespark.engines.spark import run_spark

        return run_spark(graph, inputs, mode=mode, reorder_latency=reorder_latency, late=late, **engine_options)
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
