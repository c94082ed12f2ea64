"""Number types for command-line options: each parses one value or says what is wrong with it."""
from __future__ import annotations

import argparse
import math


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
