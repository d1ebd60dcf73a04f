"""Test helpers that ship with turnstore, for this project's tests and for yours.

- [`FakeOpenAIServer`][turnstore.testing.FakeOpenAIServer]: an OpenAI-compatible HTTP server
  on 127.0.0.1 to point the real `openai` client at. From a shell,
  `python -m turnstore.testing.fake_openai [--port N]` runs it with the Responses (streaming
  too), `responses/compact` and Conversations endpoints and replies that quote the user messages
  they received, and prints the `OPENAI_BASE_URL` and `OPENAI_API_KEY` to export: a way to try
  turnstore and its examples without an API key.
- [`ScriptedModel`][turnstore.testing.ScriptedModel]: a model that answers from a script,
  without HTTP, and records each request.
- [`SessionConformanceTests`][turnstore.testing.SessionConformanceTests]: the contract tests
  any `Session` implementation can run (needs pytest and pytest-asyncio; imported on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memory.extras import lazy_getattr
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
"""Static: the same on every install. `SessionConformanceTests` and the scripted model are
imported on first use (`__getattr__`, so that the fake server runs without importing pytest or
openai); the conformance suite raises an `ImportError` saying what to install when pytest is
missing."""


if not TYPE_CHECKING:  # type checkers see the lazy names through the imports above, and
    # flag any other name (a module `__getattr__` would make every name `Any` to them)
    __getattr__ = lazy_getattr(__name__, __all__)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
