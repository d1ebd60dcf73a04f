"""Malformed model replies, through the real `openai` client and the fake server.

Whatever a server (or a proxy in front of it) sends back, a run fails with the documented
`ModelCallError` (the answer could not be read: not JSON, cut off) or `ModelBehaviorError` (it was
read but is not a usable response), never with a `JSONDecodeError`, `TypeError`,
`AttributeError`, `KeyError` or a pydantic error; and the session then holds the saved input and
nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from support.tools import lookup
from turnstore import (
    Agent,
    ModelBehaviorError,
    ModelCallError,
    RunConfig,
    Runner,
    SQLiteSession,
    TurnstoreError,
)
from turnstore.testing import (
    FakeOpenAIServer,
    FakeReply,
    message_item,
    response_body,
    sse_events_for,
    tool_call_response,
)


def _good() -> dict[str, Any]:
    return response_body([message_item("fine")], response_id="resp_good")


def _with(**fields: Any) -> dict[str, Any]:
    return {**_good(), **fields}


def _message(**fields: Any) -> dict[str, Any]:
    return _with(output=[{**message_item("x"), **fields}])


def _without(name: str) -> dict[str, Any]:
    body = _good()
    del body[name]
    return body


_GOOD_BYTES = json.dumps(_good()).encode()
# A valid JSON body whose annotations are nested deeper than the decoder can follow.
_DEEP_BYTES = (
    json.dumps(_good())
    .replace('"annotations": []', '"annotations": ' + "[" * 5000 + "]" * 5000)
    .encode()
)
# A valid JSON body whose text is a lone surrogate (JSON allows the escape; UTF-8 cannot store it).
_SURROGATE = _with(output=[message_item("\ud800")])

# name -> (reply for a plain request, the error it must raise)
PLAIN: dict[str, tuple[FakeReply | dict[str, Any], type[TurnstoreError]]] = {
    "not json": (FakeReply(raw=b"this is not json"), ModelCallError),
    "truncated": (FakeReply(raw=_GOOD_BYTES[: len(_GOOD_BYTES) // 2]), ModelCallError),
    "html error page": (FakeReply(raw=b"<html><body>Bad gateway</body></html>"), ModelCallError),
    "empty object": ({}, ModelBehaviorError),
    "empty list": (FakeReply(raw=b"[]"), ModelBehaviorError),
    "null": (FakeReply(raw=b"null"), ModelBehaviorError),
    "a string": (FakeReply(raw=b'"ok"'), ModelBehaviorError),
    "output is a string": (_with(output="hello"), ModelBehaviorError),
    "output is an object": (_with(output={"type": "message"}), ModelBehaviorError),
    "output is null": (_with(output=None), ModelBehaviorError),
    "output missing": (_without("output"), ModelBehaviorError),
    "id missing": (_without("id"), ModelBehaviorError),
    "output item is a string": (_with(output=["hello"]), ModelBehaviorError),
    "output item without type": (_with(output=[{"id": "x"}]), ModelBehaviorError),
    "only unknown item types": (_with(output=[{"type": "hologram"}]), ModelBehaviorError),
    "message without content": (
        _with(output=[{"type": "message", "id": "m", "role": "assistant"}]),
        ModelBehaviorError,
    ),
    "message content null": (_message(content=None), ModelBehaviorError),
    "message content a string": (_message(content="hi"), ModelBehaviorError),
    "content part without type": (_message(content=[{"text": "hi"}]), ModelBehaviorError),
    "output_text without text": (
        _message(content=[{"type": "output_text", "annotations": []}]),
        ModelBehaviorError,
    ),
    "function call without arguments": (
        _with(output=[{"type": "function_call", "id": "f", "call_id": "c", "name": "lookup"}]),
        ModelBehaviorError,
    ),
    "usage tokens a string": (
        _with(usage={**_good()["usage"], "input_tokens": "3"}),
        ModelBehaviorError,
    ),
    "usage partial": (_with(usage={"input_tokens": 1}), ModelBehaviorError),
    "usage negative": (
        _with(usage={**_good()["usage"], "total_tokens": -1}),
        ModelBehaviorError,
    ),
    "nested too deeply to read": (FakeReply(raw=_DEEP_BYTES), ModelCallError),
    "text with a lone surrogate": (_SURROGATE, ModelBehaviorError),
    "usage details a string": (
        _with(usage={**_good()["usage"], "input_tokens_details": "x"}),
        ModelBehaviorError,
    ),
    "usage details a list": (
        _with(usage={**_good()["usage"], "output_tokens_details": [1]}),
        ModelBehaviorError,
    ),
    "status failed": (
        _with(status="failed", error={"code": "server_error", "message": "boom"}),
        ModelBehaviorError,
    ),
}


def _sse(*frames: str) -> FakeReply:
    return FakeReply(raw="".join(frames).encode(), content_type="text/event-stream")


def _frame(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"


_EVENTS = sse_events_for(_good())

# name -> (reply for a streamed request, the error it must raise)
STREAMED: dict[str, tuple[FakeReply | dict[str, Any], type[TurnstoreError]]] = {
    "frame not json": (_sse(_frame(_EVENTS[0]), "data: {not json\n\n"), ModelCallError),
    "ends without response.completed": (
        FakeReply(events=_EVENTS[:-1]),
        ModelBehaviorError,
    ),
    "cut off mid-frame": (
        _sse(_frame(_EVENTS[0]), _frame(_EVENTS[-1])[:40]),
        ModelBehaviorError,
    ),
    "empty stream": (_sse(""), ModelBehaviorError),
    "completed with an empty object": (
        FakeReply(events=[{"type": "response.completed", "response": {}}]),
        ModelBehaviorError,
    ),
    "completed with output a string": (
        FakeReply(events=[{"type": "response.completed", "response": _with(output="x")}]),
        ModelBehaviorError,
    ),
    "completed without response": (
        FakeReply(events=[{"type": "response.completed"}]),
        ModelBehaviorError,
    ),
    "delta without text": (
        FakeReply(events=[{"type": "response.output_text.delta", "item_id": "m"}, _EVENTS[-1]]),
        ModelBehaviorError,
    ),
    "event without type": (_sse('data: {"sequence_number": 0}\n\n'), ModelBehaviorError),
    "error event": (
        FakeReply(events=[{"type": "error", "message": "overloaded", "sequence_number": 0}]),
        ModelBehaviorError,
    ),
    "frame nested too deeply to read": (
        _sse(_frame(_EVENTS[0]), "data: " + "[" * 5000 + "]" * 5000 + "\n\n"),
        ModelCallError,
    ),
    "completed with a lone surrogate": (
        FakeReply(events=[{"type": "response.completed", "response": _SURROGATE}]),
        ModelBehaviorError,
    ),
    "completed with usage details a string": (
        FakeReply(
            events=[
                {
                    "type": "response.completed",
                    "response": _with(usage={**_good()["usage"], "input_tokens_details": "x"}),
                }
            ]
        ),
        ModelBehaviorError,
    ),
    "a malformed completed response": (
        FakeReply(events=[{"type": "response.completed", "response": _message(content=None)}]),
        ModelBehaviorError,
    ),
}


def _assert_mapped(error: BaseException, expected: type[TurnstoreError]) -> None:
    assert type(error) is expected, f"{type(error).__name__}: {error}"
    if expected is ModelCallError:
        assert error.__cause__ is not None  # the client's or the decoder's exception


async def _stored(path: Path, session_id: str) -> list[Any]:
    async with SQLiteSession(session_id, path) as session:
        return await session.get_items()


@pytest.mark.parametrize("name", list(PLAIN))
async def test_run_maps_a_malformed_reply_and_keeps_only_the_input(
    name: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    reply, expected = PLAIN[name]
    fake_openai.enqueue(reply)
    db = tmp_path / "chats.db"
    agent = Agent(name="A", tools=[lookup])
    async with fake_openai.async_client() as client, SQLiteSession("s", db) as session:
        with pytest.raises(TurnstoreError) as info:
            await Runner.run(
                agent, "question", session=session, run_config=RunConfig(openai_client=client)
            )
    _assert_mapped(info.value, expected)
    assert await _stored(db, "s") == [{"role": "user", "content": "question"}]


@pytest.mark.parametrize("name", ["not json", "truncated", "empty list", "output is a string"])
def test_run_sync_maps_a_malformed_reply(
    name: str, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    reply, expected = PLAIN[name]
    fake_openai.enqueue(reply)
    db = tmp_path / "chats.db"
    session = SQLiteSession("s", db)
    try:
        with pytest.raises(TurnstoreError) as info:
            Runner.run_sync(Agent(name="A"), "question", session=session)
        _assert_mapped(info.value, expected)
        assert Runner.run_sync(Agent(name="A"), [], session=session).final_output == "ok"
    finally:
        asyncio.run(session.aclose())
    assert len(fake_openai.requests_to("/v1/responses")) == 2


@pytest.mark.parametrize("name", [*list(STREAMED), "empty object"])
async def test_run_streamed_maps_a_malformed_stream_and_keeps_only_what_was_done(
    name: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    reply, expected = STREAMED[name] if name in STREAMED else PLAIN[name]
    fake_openai.enqueue(reply)
    db = tmp_path / "chats.db"
    async with fake_openai.async_client() as client, SQLiteSession("s", db) as session:
        result = Runner.run_streamed(
            Agent(name="A"), "question", session=session, run_config=RunConfig(openai_client=client)
        )
        kinds: list[str] = []

        async def consume() -> None:
            async with contextlib.aclosing(result.stream_events()) as events:
                async for event in events:
                    kinds.append(event.type)

        with pytest.raises(TurnstoreError) as info:
            await consume()
    _assert_mapped(info.value, expected)
    assert "run_complete" not in kinds
    stored = await _stored(db, "s")
    assert stored[0] == {"role": "user", "content": "question"}
    if name == "ends without response.completed":
        # The message was reported done before the stream broke: a streamed run saves each
        # item as it is done, so it is kept (once), and announced.
        assert [item.get("type") for item in stored[1:]] == ["message"]
        assert kinds.count("run_item") == 1
    else:
        assert stored == [{"role": "user", "content": "question"}]
        assert "run_item" not in kinds


async def test_a_malformed_second_turn_keeps_the_first_turn_whole(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.enqueue(
        tool_call_response("lookup", {"key": "a"}, call_id="call_1"),
        _message(content=None),
    )
    db = tmp_path / "chats.db"
    async with fake_openai.async_client() as client, SQLiteSession("s", db) as session:
        with pytest.raises(ModelBehaviorError, match="no content list"):
            await Runner.run(
                Agent(name="A", tools=[lookup]),
                "question",
                session=session,
                run_config=RunConfig(openai_client=client),
            )
    stored = await _stored(db, "s")
    assert [item.get("type") for item in stored] == [None, "function_call", "function_call_output"]


async def test_unknown_item_types_beside_a_message_are_kept(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    # Forward compatibility: an item type this release does not know is stored as it came.
    fake_openai.enqueue(_with(output=[{"type": "hologram", "id": "h1"}, message_item("done")]))
    db = tmp_path / "chats.db"
    async with fake_openai.async_client() as client, SQLiteSession("s", db) as session:
        result = await Runner.run(
            Agent(name="A"), "question", session=session, run_config=RunConfig(openai_client=client)
        )
    assert result.final_output == "done"
    assert [item.get("type") for item in await _stored(db, "s")] == [None, "hologram", "message"]
