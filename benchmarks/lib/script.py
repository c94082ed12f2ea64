"""What the benchmark scripts share: running one, with its errors as one line."""
from __future__ import annotations

import argparse
import sys

from flamespark.core.errors import FlameSparkError


def run_script(parser: argparse.ArgumentParser, command, argv=None) -> int:
    """Parse `argv` with `parser` and call `command(args)`; its exit status, or 1 with a one-line error naming the
    script for a FlameSparkError or an OSError (which names its file), or 130 on Ctrl-C."""
    args = parser.parse_args(argv)
    try:
        return command(args)
    except (FlameSparkError, OSError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
