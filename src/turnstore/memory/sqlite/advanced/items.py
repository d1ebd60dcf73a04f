"""What `AdvancedSQLiteSession` derives from stored items: turns, message types, tool names, usage.

Pure functions (no SQLite), run on the database's thread with the decoded items of a branch.
A *turn* starts at each user message (`"role": "user"`) and holds every item up to the next one;
items before the first user message are turn 0. Turn numbers are counted on the branch's view
when read, so they always match what `get_items` returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ...codec import MAX_LIMIT

__all__ = [
    "content_preview",
    "content_texts",
    "is_user",
    "message_type",
    "numbered_turns",
    "tool_name",
    "tool_usage",
    "usage_row",
]

_TOOL_CALLS = frozenset(
    {
        "tool_call",
        "function_call",
        "computer_call",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "tool_search_call",
        "custom_tool_call",
        "mcp_call",
        "mcp_approval_request",
        "shell_call",
        "apply_patch_call",
    }
)
"""Item types that count as one use of a tool."""

_NAMED_BY_TYPE = frozenset(
    {
        "computer_call",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "shell_call",
        "apply_patch_call",
    }
)
"""Hosted tool calls without a `name`: the type names the tool."""


def is_user(item: Any) -> bool:
    """Whether an item is a user message, which starts a turn."""
    return isinstance(item, dict) and item.get("role") == "user"


def numbered_turns(items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
    """Yield (turn number, item) for the items of a branch, oldest first."""
    turn = 0
    for item in items:
        if is_user(item):
            turn += 1
        yield turn, item


def message_type(item: Any) -> str:
    """`"user"`, `"assistant"`, the item's `type`, or `"other"`."""
    role = item.get("role") if isinstance(item, dict) else None
    if role in ("user", "assistant"):
        return str(role)
    kind = item.get("type") if isinstance(item, dict) else None
    return str(kind) if kind else "other"


def tool_name(item: Any) -> str | None:
    """The tool an item calls or answers, or `None`.

    MCP items are named `server.tool`; hosted tools without a name by their type; tool search
    items `tool_search`; other calls by `namespace.name` (a namespace equal to the name is the
    wire shape of a deferred top-level tool and is dropped).
    """
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    name = item.get("name")
    if kind in ("mcp_call", "mcp_approval_request") and "server_label" in item:
        label = item.get("server_label")
        if label and name:
            return f"{label}.{name}"
        return str(label or name) if (label or name) else None
    if kind in ("tool_search_call", "tool_search_output"):
        return "tool_search"
    if kind in _NAMED_BY_TYPE:
        return str(kind)
    if name is None or not str(name):
        return None
    namespace = item.get("namespace")
    if isinstance(namespace, str) and namespace and namespace != str(name):
        return f"{namespace}.{name}"
    return str(name)


def tool_usage(items: Iterable[Any]) -> list[tuple[str, int, int]]:
    """(tool name, uses, turn) for a branch, by turn, tools in order of first use.

    A `tool_search_output` counts as a use only when its turn holds no `tool_search_call`.
    """
    counts: dict[tuple[int, str], int] = {}
    searched: set[int] = set()
    outputs: list[int] = []
    for turn, item in numbered_turns(items):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "tool_search_output":
            outputs.append(turn)
            continue
        name = tool_name(item) if kind in _TOOL_CALLS else None
        if name is None:
            continue
        if kind == "tool_search_call":
            searched.add(turn)
        counts[turn, name] = counts.get((turn, name), 0) + 1
    for turn in outputs:
        if turn not in searched:
            counts[turn, "tool_search"] = counts.get((turn, "tool_search"), 0) + 1
    ordered = sorted(counts.items(), key=lambda entry: entry[0][0])
    return [(name, uses, turn) for (turn, name), uses in ordered]


def content_texts(content: Any) -> list[str]:
    """The searchable texts of a user message's `content` (a string, or its parts' `text`)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
    return []


def content_preview(content: Any, length: int | None = None) -> str:
    """`content` as a string (parts as JSON), cut to `length` characters plus `...`."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if length is not None and len(text) > length:
        return text[:length] + "..."
    return text


def usage_row(usage: Any) -> tuple[int, int, int, int, str | None, str | None]:
    """(requests, input, output, total tokens, input details JSON, output details JSON).

    Accepts turnstore's `Usage` (`cached_input_tokens`, `reasoning_tokens`) and the OpenAI
    Agents SDK's (`input_tokens_details`, `output_tokens_details` objects).

    Raises:
        TypeError: A count is missing or not a non-negative int.
        ValueError: A count is above 2**63 - 1, the largest integer SQLite stores.
    """
    counts: list[int] = []
    for field in ("requests", "input_tokens", "output_tokens", "total_tokens"):
        value = getattr(usage, field, None)
        value = 0 if value is None else value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TypeError(
                f"usage.{field} must be a non-negative int, not {value!r} "
                f"(usage is {type(usage).__name__})"
            )
        if value > MAX_LIMIT:
            raise ValueError(f"usage.{field} is {value}, above 2**63 - 1: SQLite cannot store it")
        counts.append(value)
    details_in = _details(usage, "input_tokens_details", "cached_input_tokens", "cached_tokens")
    details_out = _details(usage, "output_tokens_details", "reasoning_tokens", "reasoning_tokens")
    return counts[0], counts[1], counts[2], counts[3], details_in, details_out


def _details(usage: Any, attribute: str, flat: str, key: str) -> str | None:
    details = getattr(usage, attribute, None)
    if details is None:
        value = getattr(usage, flat, None)
        return None if value is None else json.dumps({key: value})
    if hasattr(details, "model_dump"):
        data = details.model_dump()
    elif isinstance(details, dict):
        data = details
    else:
        data = vars(details)
    try:
        return json.dumps(data)
    except (TypeError, ValueError):
        return None
