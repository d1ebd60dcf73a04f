"""The one tool the runner tests hand their agents: a model calls it, the run records its output."""

from __future__ import annotations

from turnstore import function_tool


@function_tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"
