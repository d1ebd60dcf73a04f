"""Fixtures for the compaction and Conversations tests: the fake APIs and an in-memory session."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from openai import AsyncOpenAI

from turnstore import SessionSettings
from turnstore.testing import FakeCompactionAPI, FakeConversationsAPI, FakeOpenAIServer


class ListSession:
    """A plain in-memory session that is not SQLite, with hooks to inject faults.

    `before_add` runs (and may raise or block) before an `add_items` stores anything; it fires
    once, unless it returns True.
    """

    def __init__(self, session_id: str = "mem", items: list[Any] | None = None) -> None:
        self.session_id = session_id
        self.session_settings: SessionSettings | None = None
        self.items: list[Any] = copy.deepcopy(items or [])
        self.before_add: Callable[[list[Any]], Any] | None = None
        self.calls: list[str] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        self.calls.append("get_items")
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = self.items if limit is None else self.items[-limit:] if limit else []
        return copy.deepcopy(items)

    async def add_items(self, items: list[Any]) -> None:
        self.calls.append("add_items")
        hook, self.before_add = self.before_add, None
        if hook is not None:
            result = hook(items)
            if asyncio.iscoroutine(result):
                result = await result
            if result is True:
                self.before_add = hook
        await asyncio.sleep(0)
        self.items.extend(copy.deepcopy(items))

    async def pop_item(self) -> Any:
        self.calls.append("pop_item")
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.calls.append("clear_session")
        await asyncio.sleep(0)
        self.items.clear()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


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
