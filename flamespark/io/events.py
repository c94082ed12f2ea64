"""Checks on what a run is given: an input for every source, an integer time for every event."""
from flamespark.core.errors import InputError


def check_input_names(sources: list, inputs) -> None:
    """Every source has an input and every input a source, or InputError."""
    unknown = sorted(set(inputs) - set(sources))
    if unknown:
        raise InputError(f"no source named {', '.join(map(repr, unknown))}; the graph's sources are {sources}")
    missing = sorted(set(sources) - set(inputs))
    if missing:
        raise InputError(f"no input given for source(s) {', '.join(map(repr, missing))}")


def check_event_time(ts, where: str) -> int:
    """The event time as an int, or InputError naming `where`."""
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise InputError(f"{where}: event time must be an integer (ms), got {type(ts).__name__} {ts!r}")
    return ts
