"""Builds FlameSpark; the metadata is in setup.cfg.

The modules every item passes through (items, operators, barrier, the local
engine) are also compiled with Cython, as they are, into extension modules
that Python imports in their place: the same code, without the interpreter's
dispatch between its calls. Where Cython or a C compiler is missing, or with
FLAMESPARK_PURE_PYTHON=1 set, they run as plain Python, which gives the same
results.
"""
import os

from setuptools import setup

CORE = [
    "flamespark/core/codec.py",
    "flamespark/core/items.py",
    "flamespark/engines/local.py",
    "flamespark/runtime/changes.py",
    "flamespark/runtime/plan.py",
    "flamespark/runtime/progress.py",
    "operators/base.py",
    "operators/bucket.py",
    "operators/buffer_sort.py",
    "operators/grouping.py",
    "operators/keyed.py",
    "operators/stateful.py",
    "operators/stateless.py",
    "operators/statelog.py",
    "operators/store.py",
    "operators/stored_log.py",
    "barrier/barrier.py",
    "barrier/impatience.py",
]


def core_extensions() -> list:
    if os.environ.get("FLAMESPARK_PURE_PYTHON"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    from setuptools import Extension

    # optional: a module that fails to compile stays plain Python rather than failing the install.
    modules = [Extension(path[:-3].replace("/", "."), [path], optional=True) for path in CORE]
    # Annotations stay hints, as in plain Python, rather than types Cython would enforce.
    return cythonize(modules, build_dir="build/cython", language_level=3, quiet=True,
                     compiler_directives={"annotation_typing": False})


setup(ext_modules=core_extensions())
