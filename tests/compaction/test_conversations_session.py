"""OpenAIConversationsSession against the fake Conversations API, with the real client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from openai import AsyncOpenAI

from support.waiting import eventually
from turnstore import (
    Agent,
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    RunConfig,
    Runner,
    Session,
    SessionStorageError,
    UserError,
)
from turnstore.testing import (
    FakeConversationsAPI,
    FakeOpenAIServer,
    FakeReply,
    text_response,
)

from .conftest import assistant, user


def texts(items: list[Any]) -> list[str]:
    return [item["content"][0]["text"] for item in items]


def conversation_requests(server: FakeOpenAIServer) -> list[tuple[str, str, Any]]:
    return [
        (r.method, r.path, r.query)
        for r in server.requests
        if r.path.startswith("/v1/conversations")
    ]


async def test_nothing_is_created_until_the_first_write(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    assert isinstance(session, Session)
    assert session.session_id == ""
    assert session.conversation_id is None
    assert await session.get_items() == []
    assert await session.pop_item() is None
    await session.clear_session()
    await session.add_items([])
    assert fake_openai.requests == []
    await session.add_items([user("hello")])
    assert session.conversation_id is not None
    assert session.session_id == session.conversation_id
    # The conversation was created with the items, in one request.
    [request] = fake_openai.requests
    assert (request.method, request.path) == ("POST", "/v1/conversations")
    assert request.body == {"items": [user("hello")]}
    assert texts(await session.get_items()) == ["hello"]


async def test_large_batches_go_in_chunks_of_twenty_in_order(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    batch = [user(f"m{n}") for n in range(45)]
    await session.add_items(batch)
    posts = [r for r in fake_openai.requests if r.method == "POST"]
    assert [r.path for r in posts] == [
        "/v1/conversations",
        f"/v1/conversations/{session.conversation_id}/items",
        f"/v1/conversations/{session.conversation_id}/items",
    ]
    assert [len(r.body["items"]) for r in posts] == [20, 20, 5]
    assert texts(conversations_api.items(session.session_id)) == [f"m{n}" for n in range(45)]


async def test_get_items_with_a_limit_reads_only_the_newest_page(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    await session.add_items([user(f"m{n}") for n in range(60)])
    fake_openai.requests.clear()
    assert texts(await session.get_items(3)) == ["m57", "m58", "m59"]
    [request] = fake_openai.requests
    assert request.method == "GET"
    assert request.query == {"order": ["desc"], "limit": ["3"]}


async def test_get_items_pages_backwards_past_one_hundred(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    await session.add_items([user(f"m{n}") for n in range(250)])
    fake_openai.requests.clear()
    assert texts(await session.get_items(150)) == [f"m{n}" for n in range(100, 250)]
    queries = [r.query for r in fake_openai.requests]
    assert len(queries) == 2
    assert queries[0] == {"order": ["desc"], "limit": ["100"]}
    assert queries[1]["after"] == [conversations_api.items(session.session_id)[150]["id"]]
    # Without a limit: everything, oldest first, in pages of 100.
    fake_openai.requests.clear()
    assert texts(await session.get_items()) == [f"m{n}" for n in range(250)]
    assert [r.query["order"] for r in fake_openai.requests] == [["asc"]] * 3


async def test_limits_from_settings_zero_and_negative(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client, session_settings={"limit": 2})
    await session.add_items([user("a"), assistant("b"), user("c")])
    assert texts(await session.get_items()) == ["b", "c"]
    assert texts(await session.get_items(10)) == ["a", "b", "c"]
    assert await session.get_items(0) == []
    with pytest.raises(ValueError, match="limit"):
        await session.get_items(-1)


async def test_pop_item_deletes_the_newest_item(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    await session.add_items([user("a"), user("b")])
    newest_id = conversations_api.items(session.session_id)[-1]["id"]
    fake_openai.requests.clear()
    popped = await session.pop_item()
    assert popped is not None
    assert texts([popped]) == ["b"]
    assert conversation_requests(fake_openai)[-1][:2] == (
        "DELETE",
        f"/v1/conversations/{session.session_id}/items/{newest_id}",
    )
    assert texts(await session.get_items()) == ["a"]
    assert await session.pop_item() is not None
    assert await session.pop_item() is None


async def test_clear_session_deletes_the_conversation(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    await session.add_items([user("a")])
    first = session.session_id
    await session.clear_session()
    assert conversations_api.deleted == [first]
    assert session.conversation_id is None
    assert await session.get_items() == []
    await session.add_items([user("b")])  # a fresh conversation
    assert session.session_id not in ("", first)
    assert texts(await session.get_items()) == ["b"]


async def test_an_existing_conversation_is_used_as_it_is(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    conversation = await client.conversations.create(items=[user("earlier")])
    session = OpenAIConversationsSession(conversation_id=conversation.id, client=client)
    assert session.session_id == conversation.id
    await session.add_items([user("now")])
    assert texts(await session.get_items()) == ["earlier", "now"]
    assert [r.path for r in fake_openai.requests if r.method == "POST"][-1] == (
        f"/v1/conversations/{conversation.id}/items"
    )
    with pytest.raises(ValueError, match="conversation_id"):
        OpenAIConversationsSession(conversation_id="", client=client)


async def test_ensure_conversation_creates_it_once(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    ids = await asyncio.gather(*(session.ensure_conversation() for _ in range(5)))
    assert len(set(ids)) == 1
    assert list(conversations_api.conversations) == [ids[0]]


async def test_a_failed_chunk_removes_the_chunks_already_written(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    await session.add_items([user("kept")])
    # The first chunk is written, the second fails: the first one is deleted again.
    conversations_api.fail_next("POST", r"/items$", skip=1)
    batch = [user(f"m{n}") for n in range(50)]
    with pytest.raises(SessionStorageError, match="nothing of the batch was kept"):
        await session.add_items(batch)
    assert texts(conversations_api.items(session.session_id)) == ["kept"]
    deletes = [r for r in fake_openai.requests if r.method == "DELETE"]
    assert len(deletes) == 20


async def test_a_failure_while_creating_the_conversation_leaves_nothing(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    conversations_api.fail_next("POST", r"/items$", FakeReply(status=503))
    with pytest.raises(SessionStorageError):
        await session.add_items([user(f"m{n}") for n in range(25)])
    # The conversation created with the first 20 items was deleted again.
    assert conversations_api.conversations == {}
    assert session.conversation_id is None


async def test_a_cancelled_add_is_stored_whole(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    await session.add_items([user("first")])
    conversations_api.fail_next(
        "POST",
        r"/items$",
        FakeReply(
            delay=0.3,
            body={"object": "list", "data": [], "first_id": "", "last_id": "", "has_more": False},
        ),
    )
    task = asyncio.create_task(session.add_items([user(f"m{n}") for n in range(30)]))

    def first_chunk_sent() -> bool:
        return any(r.method == "POST" and r.path.endswith("/items") for r in fake_openai.requests)

    await eventually(first_chunk_sent, "the first chunk to reach the server")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The delayed reply stood in for the first chunk (so it stored nothing); the second chunk was
    # still sent after the cancellation: the write ran to its end.
    posts = [r for r in fake_openai.requests if r.method == "POST" and r.path.endswith("/items")]
    assert [len(r.body["items"]) for r in posts] == [20, 10]


async def test_bad_items_are_refused_before_any_request(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(client=client)
    with pytest.raises(TypeError, match="item 1 is not a mapping"):
        await session.add_items([user("ok"), "nope"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="item 0 is not JSON-serialisable"):
        await session.add_items([{"role": "user", "content": object()}])  # type: ignore[list-item]
    assert fake_openai.requests == []


async def test_too_deep_and_non_json_numbers_are_refused_before_any_request(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    deep: dict[str, object] = {"role": "user", "content": "deep"}
    for _ in range(100_000):
        deep = {"type": "message", "nested": deep}
    session = OpenAIConversationsSession(client=client)
    with pytest.raises(TypeError, match="item 1 is not JSON-serialisable"):
        await session.add_items([user("ok"), deep])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="item 0 is not JSON-serialisable"):
        await session.add_items([{"role": "user", "content": "x", "n": float("nan")}])  # type: ignore[typeddict-unknown-key]
    assert fake_openai.requests == []


async def test_api_errors_become_storage_errors(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    session = OpenAIConversationsSession(conversation_id="conv_missing", client=client)
    with pytest.raises(SessionStorageError, match="conv_missing") as caught:
        await session.get_items()
    assert caught.value.__cause__ is not None


async def test_it_cannot_be_wrapped_by_compaction(client: AsyncOpenAI) -> None:
    with pytest.raises(UserError, match="cannot wrap an OpenAIConversationsSession"):
        OpenAIResponsesCompactionSession("s", OpenAIConversationsSession(client=client))


async def test_runner_remembers_through_the_conversation(
    fake_openai: FakeOpenAIServer, conversations_api: FakeConversationsAPI, client: AsyncOpenAI
) -> None:
    agent = Agent(name="Assistant", model="gpt-4.1")
    config = RunConfig(openai_client=client)
    fake_openai.enqueue(text_response("Hello Ada."), text_response("Your name is Ada."))
    session = OpenAIConversationsSession(client=client)
    await Runner.run(agent, "My name is Ada.", session=session, run_config=config)
    # Another session object on the same conversation, as another process would open it.
    again = OpenAIConversationsSession(conversation_id=session.session_id, client=client)
    result = await Runner.run(agent, "What is my name?", session=again, run_config=config)
    assert result.final_output == "Your name is Ada."
    second = fake_openai.requests_to("/v1/responses")[1].body["input"]
    assert [item["role"] for item in second] == ["user", "assistant", "user"]
    assert second[0]["content"][0]["text"] == "My name is Ada."
    assert second[1]["content"][0]["text"] == "Hello Ada."
    stored = conversations_api.items(session.session_id)
    assert [item["content"][0]["text"] for item in stored] == [
        "My name is Ada.",
        "Hello Ada.",
        "What is my name?",
        "Your name is Ada.",
    ]
