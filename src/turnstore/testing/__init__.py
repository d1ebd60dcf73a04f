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

from typing import TYPE_CHECKING, Any

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
from .scripted_model import ScriptedModel, ScriptStep

if TYPE_CHECKING:
    from .conformance import SessionConformanceTests

__all__ = [
    "FakeCompactionAPI",
    "FakeConversationsAPI",
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "ScriptStep",
    "ScriptedModel",
    "SessionConformanceTests",
    "function_call_item",
    "message_item",
    "response_body",
    "sse_events_for",
    "text_response",
    "tool_call_response",
]


def _pytest_missing() -> bool:
    import importlib.util

    try:
        return any(importlib.util.find_spec(m) is None for m in ("pytest", "pytest_asyncio"))
    except (ImportError, ValueError):
        return True


# `from turnstore.testing import *` imports every name in `__all__`: without pytest, the
# conformance suite is left out (importing it by name still says what to install).
# (A loop, not `__all__.remove("...")`: type checkers apply a literal removal statically and
# would then refuse `from turnstore.testing import SessionConformanceTests`.)
for _name in ["SessionConformanceTests"] if _pytest_missing() else []:
    __all__.remove(_name)


def __getattr__(name: str) -> Any:
    # The conformance suite imports pytest: load it only when asked for.
    if name == "SessionConformanceTests":
        try:
            from .conformance import SessionConformanceTests
        except ImportError as exc:
            raise ImportError(
                "SessionConformanceTests needs pytest and pytest-asyncio: "
                "pip install pytest pytest-asyncio"
            ) from exc

        return SessionConformanceTests
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
