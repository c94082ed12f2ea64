"""Types for command-line options (each parses one value or says what is wrong with it), and their help's format.

The `flamespark` command parses its options with them, and so do the command lines below it and beside it: a
tool's own (`python -m flamespark.tools.wikipedia`), the examples' and the benchmark scripts'.
"""
from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path

PIPELINE_HELP = ("Python file and the Graph in it: ATTR names a Graph, or a function of no arguments that returns "
                 "one (default: graph)")

# The master URLs Spark takes: local, local[N], local[*], local[N,F], local-cluster[N,C,M], or a cluster's URL.
_MASTER = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|(spark|k8s|mesos)://\S+|yarn")


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows each option's default, but for an option that has none (None) or is a switch (False)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def _number(text: str, kind):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text}")
    return value


def _bounded(kind, holds, requirement: str):
    """An option type for numbers of `kind` for which `holds(value)`; the error says `requirement`."""
    def parse(text: str):
        value = _number(text, kind)
        if not holds(value):
            raise argparse.ArgumentTypeError(f"must be {requirement}, not {text}")
        return value

    return parse


non_negative_int = _bounded(int, lambda value: value >= 0, ">= 0")
positive_int = _bounded(int, lambda value: value > 0, "> 0")
non_negative_float = _bounded(float, lambda value: value >= 0, ">= 0")
positive_float = _bounded(float, lambda value: value > 0, "> 0")
percent = _bounded(float, lambda value: 0 <= value <= 100, "between 0 and 100")


def comma_separated(kind, choices=None):
    """An option type for `A,B,...`: a tuple of values parsed by `kind` (another option type, or int/str),
    each one of `choices` if given."""
    def parse(text: str) -> tuple:
        values = tuple(kind(part.strip()) for part in text.split(",") if part.strip())
        if not values:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        unknown = [value for value in values if choices is not None and value not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(map(repr, unknown))} (choose from {', '.join(choices)})")
        return values

    return parse


def reorder_latencies(text: str):
    """`MS` or `MS,MS,...`: one reorder latency (an int), or several that increase (a tuple)."""
    values = comma_separated(non_negative_int)(text)
    if any(later <= earlier for earlier, later in zip(values, values[1:])):
        raise argparse.ArgumentTypeError(f"several latencies must increase, not {text}")
    return values[0] if len(values) == 1 else values


def spark_master(text: str) -> str:
    """A Spark master URL, checked before Spark starts (a wrong one would fail only once a run starts it)."""
    if not _MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"not a Spark master URL: {text!r} (e.g. local[*], local[2], spark://HOST:PORT, yarn, k8s://URL)")
    return text


def report_file(text: str) -> Path:
    """A file a command writes its report to once its work is done, checked before the work: its directory must
    exist and be writable, and it must not be a directory itself."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: directory {parent} is not writable")
    return path
