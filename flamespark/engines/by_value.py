"""Pipeline modules whose functions the Spark engine ships by value.

A module run from a file (`flamespark.tools.loader`) has a name Spark's
workers cannot import, so its functions must travel with their code. The
loader notes such modules here, and the Spark engine registers them with
PySpark's cloudpickle when it starts: a local run never imports PySpark.
"""
_noted = {}  # module name -> the module, the latest run under that name


def ship_by_value(module):
    """Have the Spark engine pickle `module`'s functions by value."""
    _noted[module.__name__] = module


def register_noted():
    """Register every noted module with PySpark's cloudpickle (registering one again changes nothing)."""
    from pyspark import cloudpickle

    for module in _noted.values():
        cloudpickle.register_pickle_by_value(module)
