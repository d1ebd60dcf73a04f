"""A session whose connections belong to one event loop gives a clear error on another loop.

Each `Runner.run_sync()` or `asyncio.run()` call starts a new loop; pooled connections (asyncpg,
redis-py, httpx) opened on the first one fail on the next with "Event loop is closed". SQLite has
no such connections and works across loops.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from turnstore import (
    Agent,
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    OpenAIResponsesModel,
    Runner,
    SessionClosedError,
    SQLiteSession,
    UserError,
)
from turnstore.testing import (
    FakeCompactionAPI,
    FakeConversationsAPI,
    FakeOpenAIServer,
    text_response,
)

USER = {"role": "user", "content": "hi"}


def _twice(make: Callable[[], Any]) -> None:
    session = make()
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        first.run_until_complete(session.add_items([USER]))
        with pytest.raises(UserError, match="another event loop") as caught:
            second.run_until_complete(session.get_items())
        assert "asyncio.run()" in str(caught.value)
        assert first.run_until_complete(session.get_items()) == [USER]
        first.run_until_complete(session.clear_session())
        first.run_until_complete(session.aclose())
    finally:
        first.close()
        second.close()


def test_sqlalchemy_session_refuses_a_second_loop(postgres_url: str) -> None:
    from turnstore.extensions.memory import SQLAlchemySession

    session_id = f"loop-{uuid.uuid4().hex}"
    _twice(lambda: SQLAlchemySession.from_url(session_id, postgres_url, create_tables=True))


def test_redis_session_refuses_a_second_loop(redis_url: str) -> None:
    from turnstore.extensions.memory import RedisSession

    session_id = f"loop-{uuid.uuid4().hex}"
    _twice(lambda: RedisSession.from_url(session_id, redis_url))


def _conversations_from_the_environment(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake server answers the Conversations API; the client is built from the environment."""
    FakeConversationsAPI().install(fake_openai)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)


def test_conversations_session_refuses_a_second_loop_until_closed(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _conversations_from_the_environment(fake_openai, monkeypatch)
    session = OpenAIConversationsSession()
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        first.run_until_complete(session.add_items([USER]))
        with pytest.raises(UserError, match="another event loop"):
            second.run_until_complete(session.get_items())
        first.run_until_complete(session.aclose())  # closes the client of the first loop
        with pytest.raises(SessionClosedError):  # closed means closed, as on every backend
            second.run_until_complete(session.get_items())
        # A new object on the same conversation gets a new client on the new loop.
        again = OpenAIConversationsSession(conversation_id=session.conversation_id)
        second.run_until_complete(again.add_items([USER]))
        assert len(second.run_until_complete(again.get_items())) == 2
        second.run_until_complete(again.aclose())
    finally:
        first.close()
        second.close()


def test_compaction_session_over_sqlite_refuses_a_second_loop(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """running_agents.md: a plain SQLiteSession works with `run_sync` again and again; wrapped
    in OpenAIResponsesCompactionSession (whose client belongs to a loop), it does not. Each
    `run_sync` is a new loop: two loops stand for two calls, and the first one closes it."""
    FakeCompactionAPI().install(fake_openai)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    agent = Agent(name="A", model=OpenAIResponsesModel("gpt-4.1"))
    wrapped = SQLiteSession("s", str(tmp_path / "compact.db"))
    session = OpenAIResponsesCompactionSession(
        "s", wrapped, should_trigger_compaction=lambda context: True
    )
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        first.run_until_complete(Runner.run(agent, "one", session=session))
        assert fake_openai.requests_to("/v1/responses/compact")  # its client joined `first`
        with pytest.raises(UserError, match="another event loop"):
            second.run_until_complete(Runner.run(agent, "two", session=session))
        first.run_until_complete(session.aclose())
    finally:
        first.close()
        second.close()
        wrapped.close()


def test_sqlite_session_works_across_loops(tmp_path: Any) -> None:
    session = SQLiteSession("s", str(tmp_path / "loops.db"))
    asyncio.run(session.add_items([USER]))
    asyncio.run(session.add_items([USER]))
    assert asyncio.run(session.get_items()) == [USER, USER]
    asyncio.run(session.aclose())


def test_conversations_session_run_sync_twice_fails_before_storing(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _conversations_from_the_environment(fake_openai, monkeypatch)
    agent = Agent(name="Assistant", model="gpt-4.1")
    session = OpenAIConversationsSession()
    fake_openai.enqueue(text_response("answer 1"), text_response("answer 2"))
    Runner.run_sync(agent, "question 1", session=session)
    model_calls = len(fake_openai.requests_to("/v1/responses"))
    with pytest.raises(UserError, match="another event loop"):
        Runner.run_sync(agent, "question 2", session=session)
    assert len(fake_openai.requests_to("/v1/responses")) == model_calls

    conversation_id = session.conversation_id

    async def stored() -> list[Any]:
        async with OpenAIConversationsSession(conversation_id=conversation_id) as again:
            return await again.get_items()

    assert [item["role"] for item in asyncio.run(stored())] == ["user", "assistant"]
    asyncio.run(session.aclose())
    # The client's connections belong to the first loop, which `run_sync` closed: nothing can
    # close them any more (why the run refuses). Let them go here rather than in a later test.
    del session
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
