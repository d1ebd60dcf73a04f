"""The tool the runner tests hand their agents: a model calls it, the run records its output."""

from __future__ import annotations

from turnstore import FunctionTool, function_tool


@function_tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def recording_lookup(calls: list[str]) -> FunctionTool:
    """`lookup`, appending each key it is called with to `calls` once its output is ready."""

    @function_tool
    async def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        calls.append(key)
        return f"value of {key}"

    return lookup
