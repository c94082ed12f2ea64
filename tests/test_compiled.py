"""The check that warns when a compiled core module is older than its source."""
import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

from flamespark.core.compiled import compiled_modules, stale_modules

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _module(root: Path, dotted: str, built_after_source: bool):
    source = root.joinpath(*dotted.split(".")).with_suffix(".py")
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("")
    built = source.with_name(source.stem + SUFFIX)
    built.write_bytes(b"")
    older, newer = (source, built) if built_after_source else (built, source)
    os.utime(older, (1_000_000, 1_000_000))
    os.utime(newer, (2_000_000, 2_000_000))


def test_a_compiled_module_older_than_its_source_is_stale(tmp_path):
    _module(tmp_path, "operators.statelog", built_after_source=True)
    _module(tmp_path, "flamespark.core.items", built_after_source=False)
    (tmp_path / "barrier").mkdir()
    (tmp_path / "barrier" / "barrier.py").write_text("")  # not compiled: neither listed nor stale
    assert compiled_modules(tmp_path) == ["flamespark.core.items", "operators.statelog"]
    assert stale_modules(tmp_path) == ["flamespark.core.items"]


def test_importing_flamespark_warns_of_no_stale_module_in_this_checkout():
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", "import flamespark"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
