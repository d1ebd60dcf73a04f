"""Item types shared by sessions and the runner.

Items are the OpenAI Responses API input items, so a history stored by agent-sessions can be
passed to `client.responses.create(input=...)` as it is, and exchanged with the OpenAI Agents SDK.
"""

from __future__ import annotations

from typing import TypeAlias

from openai.types.responses import ResponseInputItemParam

__all__ = ["TResponseInputItem"]

TResponseInputItem: TypeAlias = ResponseInputItemParam
"""One Responses API input item: a message, a function call, a function call output, a reasoning
item, a compaction item, and so on. At run time it is a plain `dict`."""
