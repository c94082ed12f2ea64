"""Loading a user's graph from `PATH.py:ATTR`."""
import importlib.util
import sys
from pathlib import Path

from flamespark.core.errors import InputError
from flamespark.engines.by_value import ship_by_value
from flamespark.graph import Graph


def load_module(path):
    """The Python file `path`, run as a module whose functions Spark's workers can unpickle."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"pipeline file {str(path)!r} does not exist")
    module_name = f"flamespark_pipeline_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    ship_by_value(module)  # Spark's workers cannot import it by its name
    return module


def load_graph(spec: str) -> Graph:
    """The Graph named ATTR in the Python file PATH (`PATH.py:ATTR`; ATTR defaults to `graph`)."""
    path_text, _, attr = spec.rpartition(":") if ":" in spec else (spec, ":", "graph")
    if not Path(path_text).is_file():
        raise InputError(f"pipeline file {path_text!r} does not exist (expected PATH.py:ATTR)")
    graph = getattr(load_module(path_text), attr, None)
    if callable(graph) and not isinstance(graph, Graph):
        graph = graph()
    if not isinstance(graph, Graph):
        raise InputError(f"{path_text} has no flamespark.Graph named {attr!r}")
    return graph

