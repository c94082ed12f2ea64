"""The machine a benchmark ran on, for its report."""
import os
import platform


def machine() -> dict:
    """Cores, Python version and platform of this machine."""
    return {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
