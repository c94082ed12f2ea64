"""A benchmark script run as the benchmarks page shows it: `python benchmarks/NAME.py ARGS` at the checkout's root."""
import subprocess
import sys
from pathlib import Path

from tests import processes

REPOSITORY = Path(__file__).resolve().parents[2]


def run_benchmark(name: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The finished run of benchmarks/NAME.py with `args`, its output captured as text; it must exit with 0."""
    done = processes.run([sys.executable, f"benchmarks/{name}.py", *args], cwd=REPOSITORY, capture_output=True,
                         text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done
