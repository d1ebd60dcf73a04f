"""Checks that a session works with the OpenAI Agents SDK's `Runner` and with ours, both ways.

Run them from a backend's tests (they need the `openai-agents` package, a dev dependency). Each
check creates sessions through a factory, drives the runners with scripted models (no HTTP), and
raises `AssertionError` with the offending items when a runner does not see the history.

Example:
    ```python
    from turnstore import SQLiteSession
    from turnstore.testing.interop import check_history_interchange


    async def test_sqlite_interop(tmp_path):
        await check_history_interchange(lambda sid: SQLiteSession(sid, tmp_path / "db.sqlite"))
    ```
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable
from typing import Any

from .._extras import missing_extra
from ..agent import Agent
from ..items import TResponseInputItem
from ..memory.session import Session
from ..runner import Runner
from ..tools import function_tool
from .fake_openai import text_response, tool_call_response
from .scripted_model import ScriptedModel

__all__ = [
    "SessionFactory",
    "check_agents_sdk_runner_remembers",
    "check_history_interchange",
    "check_runner_remembers",
]

SessionFactory = Callable[[str], "Session | Awaitable[Session]"]
"""Makes a fresh, empty session for a session id; sync or async. The OpenAI Agents SDK's
sessions are accepted too."""


async def _make(factory: SessionFactory, session_id: str) -> Any:
    session = factory(session_id)
    if inspect.isawaitable(session):
        session = await session
    return session


def _sdk() -> Any:
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    try:
        import agents
        import agents.testing
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise missing_extra("turnstore.testing.interop", packages=("openai-agents",)) from exc
    agents.set_tracing_disabled(True)
    return agents


def _texts(items: list[Any]) -> list[str]:
    """The text of each user or assistant message, in order."""
    texts: list[str] = []
    for item in items:
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.append("".join(str(part.get("text", "")) for part in content))
    return texts


def _types(items: list[Any]) -> list[str]:
    return [str(item.get("type") or item.get("role")) for item in items if isinstance(item, dict)]


def _lookup() -> Callable[[str], str]:
    """The tool both runners' agents have: `lookup(key)`."""

    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return f"value of {key}"

    return lookup


def _sdk_agent(agents: Any, key: str, call_id: str, *answers: tuple[str, str]) -> tuple[Any, Any]:
    """An SDK agent and its scripted model: `lookup(key)`, then each (text, item id) answer."""
    scripted = agents.testing
    model = scripted.ScriptedModel(
        [
            [scripted.function_call("lookup", {"key": key}, call_id=call_id)],
            *([scripted.assistant_message(text, item_id=item_id)] for text, item_id in answers),
        ]
    )
    tool = agents.function_tool(_lookup())
    return agents.Agent(name="SDK agent", model=model, tools=[tool]), model


def _our_agent(key: str, call_id: str, *answers: str) -> tuple[Agent, ScriptedModel]:
    """Our agent and its scripted model: `lookup(key)`, then each answer."""
    model = ScriptedModel(
        [
            tool_call_response("lookup", {"key": key}, call_id=call_id),
            *(text_response(text) for text in answers),
        ]
    )
    return Agent(name="Our agent", model=model, tools=[function_tool(_lookup())]), model


async def _close(session: Any) -> None:
    close = getattr(session, "aclose", None) or getattr(session, "close", None)
    if callable(close):
        result = close()
        if inspect.isawaitable(result):
            await result


async def check_agents_sdk_runner_remembers(factory: SessionFactory) -> list[TResponseInputItem]:
    """Run two turns of the OpenAI Agents SDK's `Runner` on a session; the second sees the first.

    The first turn calls a function tool, so tool calls and outputs are stored too.

    Args:
        factory: Makes the session under test.

    Returns:
        The stored items after both turns.
    """
    agents = _sdk()
    agent, model = _sdk_agent(
        agents,
        "a",
        "call_sdk_1",
        ("The value is a.", "msg_sdk_1"),
        ("You asked about a.", "msg_sdk_2"),
    )
    session = await _make(factory, "interop-sdk-runner")
    try:
        await agents.Runner.run(agent, "Look up a.", session=session)
        await agents.Runner.run(agent, "What did I ask?", session=session)
        seen = list(model.calls[-1].input)
        assert _texts(seen) == ["Look up a.", "The value is a.", "What did I ask?"], seen
        assert "function_call" in _types(seen), seen
        assert "function_call_output" in _types(seen), seen
        stored: list[TResponseInputItem] = await session.get_items()
        assert _texts(stored) == [
            "Look up a.",
            "The value is a.",
            "What did I ask?",
            "You asked about a.",
        ], stored
        return stored
    finally:
        await _close(session)


async def check_runner_remembers(factory: SessionFactory) -> list[TResponseInputItem]:
    """Run two turns of our `Runner` on a session (any backend, the SDK's included).

    Args:
        factory: Makes the session under test.

    Returns:
        The stored items after both turns.
    """
    agent, model = _our_agent("b", "call_ours_1", "The value is b.", "You asked about b.")
    session = await _make(factory, "interop-our-runner")
    try:
        await Runner.run(agent, "Look up b.", session=session)
        await Runner.run(agent, "What did I ask?", session=session)
        seen = model.last_call.input
        assert _texts(seen) == ["Look up b.", "The value is b.", "What did I ask?"], seen
        assert "function_call_output" in _types(seen), seen
        stored: list[TResponseInputItem] = await session.get_items()
        assert _texts(stored)[-1] == "You asked about b.", stored
        return stored
    finally:
        await _close(session)


async def check_history_interchange(factory: SessionFactory) -> list[TResponseInputItem]:
    """Alternate runners on one session: SDK turn, our turn, SDK turn; each sees all before.

    Proves the items each runner stores are accepted by the other: messages, function calls and
    their outputs.

    Args:
        factory: Makes the session under test.

    Returns:
        The stored items after the three turns.
    """
    agents = _sdk()
    sdk_agent, sdk_model = _sdk_agent(
        agents, "c", "call_mix_1", ("SDK says c.", "msg_mix_1"), ("SDK again.", "msg_mix_3")
    )
    our_agent, our_model = _our_agent("d", "call_mix_2", "We say d.")
    session = await _make(factory, "interop-mixed")
    try:
        await agents.Runner.run(sdk_agent, "First (SDK).", session=session)
        await Runner.run(our_agent, "Second (ours).", session=session)
        ours_saw = our_model.calls[0].input
        assert _texts(ours_saw) == ["First (SDK).", "SDK says c.", "Second (ours)."], ours_saw
        await agents.Runner.run(sdk_agent, "Third (SDK).", session=session)
        sdk_saw = list(sdk_model.calls[-1].input)
        assert _texts(sdk_saw) == [
            "First (SDK).",
            "SDK says c.",
            "Second (ours).",
            "We say d.",
            "Third (SDK).",
        ], sdk_saw
        call_ids = [item.get("call_id") for item in sdk_saw if item.get("type") == "function_call"]
        assert call_ids == ["call_mix_1", "call_mix_2"], sdk_saw
        stored: list[TResponseInputItem] = await session.get_items()
        return stored
    finally:
        await _close(session)
