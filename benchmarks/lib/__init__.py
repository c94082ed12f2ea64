"""The benchmarks' work, as functions of typed arguments; the scripts beside this package are their command lines."""
