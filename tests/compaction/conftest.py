"""Fixtures for the compaction and Conversations tests: the fake APIs and item builders."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from support.items import assistant, user
from support.waiting import eventually
from turnstore.testing import (
    FakeCompactionAPI,
    FakeConversationsAPI,
    FakeOpenAIServer,
    FakeReply,
    text_response,
)


def call(call_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output(call_id: str, text: str = "42") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def turns(count: int) -> list[dict[str, Any]]:
    """`count` turns of a user message and an assistant answer (one candidate item each)."""
    items: list[dict[str, Any]] = []
    for n in range(count):
        items += [user(f"question {n}"), assistant(f"answer {n}")]
    return items


async def serve(
    client: AsyncOpenAI, server: FakeOpenAIServer, response_id: str, items: list[Any]
) -> None:
    """Have the server answer (and keep) response `response_id` to a model call on `items`.

    The server keeps what it served, as the API does, so a compaction that names the response
    compacts that chain; an id it never served is answered with 404.
    """
    server.enqueue(text_response(f"answer to {len(items)} items", response_id=response_id))
    await client.responses.create(model="gpt-5.5", input=items)


def slow_compaction(
    delay: float, *, item_id: str | None = None, input_tokens: int = 1
) -> FakeReply:
    """A compaction answer that arrives after `delay` s: one compaction item, `item_id` if set."""
    item = {"type": "compaction", "encrypted_content": "s"}
    if item_id is not None:
        item = {"type": "compaction", "id": item_id, "encrypted_content": "s"}
    return FakeReply(
        delay=delay,
        body={
            "id": "resp_c",
            "object": "response.compaction",
            "created_at": 0,
            "output": [item],
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "total_tokens": input_tokens + 1,
            },
        },
    )


async def compaction_in_flight(
    session: Any, compaction_api: FakeCompactionAPI
) -> asyncio.Task[Any]:
    """Start `session.run_compaction()`; return its task once the API has received the call."""
    task = asyncio.create_task(session.run_compaction())
    await eventually(lambda: compaction_api.bodies, "the compact request to reach the server")
    return task


@pytest.fixture
def compaction_api(fake_openai: FakeOpenAIServer) -> FakeCompactionAPI:
    return FakeCompactionAPI().install(fake_openai)


@pytest.fixture
def conversations_api(fake_openai: FakeOpenAIServer) -> FakeConversationsAPI:
    return FakeConversationsAPI().install(fake_openai)


@pytest.fixture
async def client(fake_openai: FakeOpenAIServer) -> AsyncIterator[AsyncOpenAI]:
    async with fake_openai.async_client() as client:
        yield client
