"""A Spark home whose Python processes import the installed PySpark instead of compiling `pyspark.zip`.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on the path of every
Python process it starts: the task workers, and the planners and runners a
streaming query starts in the driver. Python compiles what it imports from a
zip archive every time and keeps no bytecode, which cost 0.6-0.8 s of CPU a
process here, several of them before a query's first batch. A pip install of
PySpark holds the same package, compiled once, beside that archive. So, for
a local master when the user set no SPARK_HOME, Spark starts from a home of
links to the installed one that leaves out `python/lib`: with the archives
absent, its processes find PySpark and py4j on the rest of their path (the
driver's, `session._expose_python_path`).
"""
import hashlib
import os
import re
import shutil
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path

LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?")
ARCHIVES = Path("python", "lib")


def cache_root() -> Path:
    """Where the linked homes are kept: the user's cache directory (a temporary one can be swept while a
    session still loads classes through its links)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "flamespark")


def installed_home() -> Path | None:
    """The pip-installed PySpark's Spark home, if it carries the archives that `linked_home` leaves out."""
    import pyspark

    home = Path(pyspark.__file__).parent
    return home if (home / ARCHIVES / "pyspark.zip").is_file() and (home / "jars").is_dir() else None


def linked_home(installed: Path, root: Path) -> Path:
    """A directory under `root` of links to each entry of `installed` but `python/lib`; made once, then reused.

    >>> import tempfile; from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as spark, tempfile.TemporaryDirectory() as cache:
    ...     spark = Path(spark).resolve(); (spark / "jars").mkdir(); (spark / "python" / "lib").mkdir(parents=True)
    ...     home = linked_home(spark, Path(cache))
    ...     sorted(str(path.relative_to(home)) for path in home.rglob("*")), (home / "jars").resolve() == spark / "jars"
    (['jars', 'python'], True)
    """
    top = _names(installed, "python")
    python = _names(installed / "python", ARCHIVES.name)
    tag = hashlib.sha256(repr((str(installed), top, python)).encode()).hexdigest()[:16]
    home = root / f"spark-home-{tag}"
    if home.is_dir():
        return home
    root.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=root))
    try:
        for name in top:
            (building / name).symlink_to(installed / name)
        (building / "python").mkdir()
        for name in python:
            (building / "python" / name).symlink_to(installed / "python" / name)
        building.rename(home)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
        if not home.is_dir():  # else another process made it first
            raise
    return home


def _names(directory: Path, but: str) -> list:
    return sorted(entry.name for entry in directory.iterdir() if entry.name != but) if directory.is_dir() else []


@contextmanager
def spark_home_for(master: str):
    """Within the block, SPARK_HOME is a `linked_home` of the installed PySpark when `master` is local and the
    user set no SPARK_HOME (theirs is used as it is); where links cannot be made, Spark's own home is used."""
    installed = None if "SPARK_HOME" in os.environ or not LOCAL_MASTER.fullmatch(master) else installed_home()
    home = None
    if installed is not None:
        with suppress(OSError):
            home = linked_home(installed, cache_root())
    if home is None:
        yield
        return
    os.environ["SPARK_HOME"] = str(home)
    try:
        yield
    finally:
        del os.environ["SPARK_HOME"]
