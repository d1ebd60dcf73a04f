"""Item builders shared by the test folders: the shapes the Responses API and our runner store."""

from __future__ import annotations

from typing import Any


def user(text: str) -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    """An assistant message as the Responses API returns it (one output_text part)."""
    return {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
