"""What the benchmark scripts share: running one, with its errors as one line; the Bytewax runs' options."""
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


def bytewax_batches(prog: str, args: argparse.Namespace):
    """The Bytewax batch sizes to run (`--bytewax-batches`, none with `--no-bytewax`), or None, with a line on
    stderr, where Bytewax is to run and is not installed."""
    if args.no_bytewax or not args.bytewax_batches:
        return ()
    try:
        import bytewax  # noqa: F401
    except ImportError:
        print(f"{prog}: Bytewax is not installed (pip install 'bytewax==0.21.1'), or pass --no-bytewax",
              file=sys.stderr)
        return None
    return args.bytewax_batches
