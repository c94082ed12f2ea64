"""Which of FlameSpark's modules run compiled, and whether a compiled one is older than its source.

Installing FlameSpark compiles the modules every item passes through with
Cython (setup.py names them), next to their sources, and Python imports a
compiled module in place of its `.py`. Once a source changes (an edit, a
`git checkout`), its compiled module would go on running the old code until
the next build: importing flamespark warns of that.

>>> all(name.split(".")[0] in PACKAGES for name in compiled_modules())
True
"""
import importlib.machinery
import os
import warnings
from pathlib import Path

PACKAGES = ("flamespark", "operators", "barrier")
_ROOT = Path(__file__).resolve().parents[2]
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _compiled_files(root: Path):
    """`(dotted name, compiled file, source file)` of every module of the packages under `root` that has both."""
    for package in PACKAGES:
        for folder, _, files in os.walk(root / package):
            for name in files:
                if name.endswith(_SUFFIXES):
                    stem = name.split(".", 1)[0]
                    source = Path(folder, stem + ".py")
                    if source.exists():
                        dotted = ".".join(Path(folder, stem).relative_to(root).parts)
                        yield dotted, Path(folder, name), source


def compiled_modules(root: Path = _ROOT) -> list:
    """The dotted names of the modules that run compiled (empty for a plain-Python install)."""
    return sorted(dotted for dotted, _, _ in _compiled_files(root))


def stale_modules(root: Path = _ROOT) -> list:
    """The compiled modules whose source changed after they were built."""
    return sorted(dotted for dotted, built, source in _compiled_files(root)
                  if source.stat().st_mtime > built.stat().st_mtime)


def warn_if_stale():
    """Warn, naming them, if compiled modules are older than their sources."""
    stale = stale_modules()
    if stale:
        warnings.warn(
            f"compiled FlameSpark module(s) older than their source, which run the old code: {', '.join(stale)}. "
            f"Rebuild them with `python -m pip install -e .`, or delete the compiled files to run the sources.",
            RuntimeWarning, stacklevel=3,
        )
