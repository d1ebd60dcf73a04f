"""Items the conformance suite writes and reads back (`conformance.py`)."""

from __future__ import annotations

from typing import Any

__all__ = ["TOO_DEEP", "deeply_nested", "msg", "texts_of"]


def msg(text: str, role: str = "user") -> Any:
    """A message item with `text` as its content."""
    return {"role": role, "content": text}


def texts_of(items: list[Any]) -> list[Any]:
    """Each message's text, stored as a string or (as an API returns it) as content parts."""
    found = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list) and all(isinstance(p, dict) for p in content):
            content = "".join(str(part.get("text", "")) for part in content)
        found.append(content)
    return found


def deeply_nested(depth: int) -> dict[str, Any]:
    """A message item nested `depth` levels deep."""
    item: dict[str, Any] = {"role": "user", "content": "deep"}
    for _ in range(depth):
        item = {"type": "message", "nested": item}
    return item


TOO_DEEP = 100_000
"""A nesting depth that no JSON encoder walks without exhausting the recursion limit."""
