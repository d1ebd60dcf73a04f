"""Test helpers that ship with turnstore, for this project's tests and for yours.

- [`FakeOpenAIServer`][turnstore.testing.FakeOpenAIServer]: an OpenAI-compatible HTTP server
  on 127.0.0.1 to point the real `openai` client at. It serves the Responses API (streaming
  too), `responses/compact` and the Conversations API. Its replies quote the user messages they
  received. From a shell, `python -m turnstore.testing.fake_openai [--port N]` runs it: a way
  to try turnstore and its examples without an API key. Its first line of output is a shell
  command that exports `OPENAI_BASE_URL` and `OPENAI_API_KEY`.
- [`ScriptedModel`][turnstore.testing.ScriptedModel]: a model that answers from a script,
  without HTTP, and records each request.
- [`SessionConformanceTests`][turnstore.testing.SessionConformanceTests]: the contract tests
  any `Session` implementation can run (needs pytest and pytest-asyncio; imported on first use).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._extras import missing_extra
from .fake_conversations import FakeCompactionAPI, FakeConversationsAPI
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

if TYPE_CHECKING:
    from .conformance import SessionConformanceTests
    from .scripted_model import ScriptedModel, ScriptStep

__all__ = [
    "FakeCompactionAPI",
    "FakeConversationsAPI",
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "ScriptStep",
    "ScriptedModel",
    "SessionConformanceTests",  # lazy: needs pytest and pytest-asyncio
    "function_call_item",
    "message_item",
    "response_body",
    "sse_events_for",
    "text_response",
    "tool_call_response",
]
"""Static: the same on every install."""

_ON_FIRST_USE: dict[str, str] = {
    "ScriptStep": ".scripted_model",
    "ScriptedModel": ".scripted_model",
    "SessionConformanceTests": ".conformance",
}
"""Imported on first use, so that the fake server runs without importing openai (the scripted
model) or pytest (the conformance suite, which says what to install when pytest is missing)."""


if not TYPE_CHECKING:  # type checkers see the names through the imports above

    def __getattr__(name: str) -> Any:
        module = _ON_FIRST_USE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        try:
            return getattr(importlib.import_module(module, __name__), name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] not in ("pytest", "pytest_asyncio"):
                raise
            raise missing_extra(name, packages=("pytest", "pytest-asyncio")) from exc


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
