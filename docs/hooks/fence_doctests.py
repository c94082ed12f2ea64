"""A griffe extension for the documentation site: docstring examples shown as Python sessions.

The project's docstrings hold their examples as plain doctests (`>>>` lines
and the output after them, up to a blank line), which the test suite runs.
Markdown would read those lines as quotes and their `[...]` output as links;
this fences each such block as `pycon` before mkdocstrings renders it.
"""
import griffe


def fence_doctests(text: str) -> str:
    """`text` with every doctest block, from a `>>>` line to the next blank line, inside a ```pycon fence.

    The site's strict build checks it: an unfenced example's output reads as a broken link.
    """
    lines, in_example, in_fence = [], False, False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and not in_example and line.lstrip().startswith(">>>"):
            lines.append(line[: len(line) - len(line.lstrip())] + "```pycon")
            in_example = True
        elif in_example and not line.strip():
            lines.append(lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())] + "```")
            in_example = False
        lines.append(line)
    if in_example:
        lines.append("```")
    return "\n".join(lines)


class FenceDoctests(griffe.Extension):
    """Fences the doctest blocks of every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
