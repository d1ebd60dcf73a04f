"""Test helpers that ship with agent-sessions, for this project's tests and for yours.

- [`FakeOpenAIServer`][agent_sessions.testing.FakeOpenAIServer]: an OpenAI-compatible HTTP server
  on 127.0.0.1 to point the real `openai` client at.
"""

from __future__ import annotations

from .fake_openai import (
    FakeOpenAIServer,
    FakeReply,
    RecordedRequest,
    function_call_item,
    message_item,
    response_body,
    sse_events_for,
    text_response,
    tool_call_response,
)

__all__ = [
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "function_call_item",
    "message_item",
    "response_body",
    "sse_events_for",
    "text_response",
    "tool_call_response",
]
