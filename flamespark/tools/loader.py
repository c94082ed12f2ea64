"""Loading a user's graph from `PATH.py:ATTR`."""
import importlib.util
import sys
import traceback
from pathlib import Path

from flamespark.core.errors import InputError
from flamespark.engines.by_value import ship_by_value
from flamespark.graph import Graph


def load_module(path):
    """The Python file `path`, run as a module whose functions Spark's workers can unpickle."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"pipeline file {str(path)!r} {'is not a file' if path.exists() else 'does not exist'}")
    if path.suffix != ".py":
        raise InputError(f"pipeline file {str(path)!r} is not a Python file (PATH.py)")
    module_name = f"flamespark_pipeline_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a pipeline file that calls sys.exit must not end the command quietly
        raise InputError(f"{_place(exc, path)}: loading the pipeline raised {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.pop(0)
    ship_by_value(module)  # Spark's workers cannot import it by its name
    return module


def _place(exc: Exception, path: Path) -> str:
    """`path:line` of the pipeline file's line that raised `exc` (or its syntax error), or `path`."""
    resolved = path.resolve()  # frames name the file as imported, absolute
    if isinstance(exc, SyntaxError) and exc.lineno and Path(exc.filename or "").resolve() == resolved:
        return f"{path}:{exc.lineno}"
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if Path(frame.filename).resolve() == resolved]
    return f"{path}:{lines[-1]}" if lines else str(path)


def load_graph(spec: str) -> Graph:
    """The Graph named ATTR in the Python file PATH (`PATH.py:ATTR`; ATTR defaults to `graph`), or made by calling
    ATTR if it is a function of no arguments."""
    path_text, _, attr = spec.rpartition(":") if ":" in spec else (spec, ":", "graph")
    if not Path(path_text).exists():
        raise InputError(f"pipeline file {path_text!r} does not exist (expected PATH.py:ATTR)")
    module = load_module(path_text)
    if not hasattr(module, attr):
        raise InputError(f"{path_text} has no {attr!r}: name a flamespark.Graph, or a function of no arguments "
                         f"that returns one")
    graph = getattr(module, attr)
    what = f"{attr} is"
    if callable(graph) and not isinstance(graph, Graph):
        try:
            graph = graph()
        except (Exception, SystemExit) as exc:
            raise InputError(f"{path_text}:{attr}: calling it with no arguments to make the Graph raised "
                             f"{type(exc).__name__}: {exc}") from exc
        what = f"{attr}() returned"
    if not isinstance(graph, Graph):
        raise InputError(f"{path_text}:{what} {type(graph).__name__}, not a flamespark.Graph")
    return graph
