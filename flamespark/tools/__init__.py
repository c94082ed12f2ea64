"""Tools on top of the runtime: benchmarks, the disorder generator, running a pipeline file to a directory."""
