"""OpenAIResponsesCompactionSession on a plain (non-SQLite) session, against the fake server."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from support.sessions import MemorySession
from support.waiting import eventually
from turnstore import (
    CompactionTriggerContext,
    OpenAIResponsesCompactionSession,
    SessionError,
    SessionStorageError,
    UserError,
)
from turnstore.agent import DEFAULT_MODEL
from turnstore.memory import is_openai_responses_compaction_aware_session
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer, FakeReply

from .conftest import (
    assistant,
    call,
    compaction_in_flight,
    output,
    serve,
    slow_compaction,
    turns,
    user,
)

MODEL = "gpt-5.5"


def wrap(
    session: MemorySession, client: AsyncOpenAI, **kwargs: Any
) -> OpenAIResponsesCompactionSession:
    return OpenAIResponsesCompactionSession(
        session.session_id, session, client=client, model=MODEL, **kwargs
    )


# -- the request body of each mode ---------------------------------------------------------------


async def test_input_mode_sends_the_stored_items(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(2))
    session = wrap(store, client, compaction_mode="input")
    usage = await session.run_compaction({"force": True, "response_id": "resp_9"})
    assert compaction_api.bodies == [{"model": MODEL, "input": turns(2)}]
    assert usage is not None
    assert usage.total_tokens == 48
    # The fake answers like the API: the user messages, then one compaction item.
    items = await session.get_items()
    assert [item.get("role") or item["type"] for item in items] == ["user", "user", "compaction"]
    assert items[-1]["encrypted_content"] == "compacted:4"


async def test_previous_response_id_mode_sends_only_the_response_id(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI, fake_openai: FakeOpenAIServer
) -> None:
    await serve(client, fake_openai, "resp_7", turns(2))
    session = wrap(MemorySession(items=turns(2)), client, compaction_mode="previous_response_id")
    await session.run_compaction({"force": True, "response_id": "resp_7"})
    assert compaction_api.bodies == [{"model": MODEL, "previous_response_id": "resp_7"}]
    # Like the API: the chain's user messages are kept, then one compaction item.
    items = await session.get_items()
    assert [item["content"] for item in items[:-1]] == [
        [{"type": "input_text", "text": "question 0"}],
        [{"type": "input_text", "text": "question 1"}],
    ]
    assert [item["role"] for item in items[:-1]] == ["user", "user"]
    assert items[-1] == {
        "type": "compaction",
        "encrypted_content": "compacted:resp_7",
        "id": items[-1]["id"],
    }


async def test_a_response_id_the_server_never_served_is_a_404_and_nothing_is_replaced(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(2))
    session = wrap(store, client, compaction_mode="previous_response_id")
    unchanged = r"history is unchanged.*'resp_unknown' not found"
    with pytest.raises(SessionError, match=unchanged) as info:
        await session.run_compaction({"force": True, "response_id": "resp_unknown"})
    assert isinstance(info.value.__cause__, openai.NotFoundError)
    assert store.items == turns(2)
    assert compaction_api.bodies == []  # answered before the route, as the API answers


async def test_previous_response_id_mode_without_a_response_id_is_a_clear_error(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    session = wrap(MemorySession(items=turns(6)), client, compaction_mode="previous_response_id")
    with pytest.raises(ValueError, match="needs a response id"):
        await session.run_compaction({"force": True})
    with pytest.raises(ValueError, match="needs a response id"):
        await wrap(MemorySession(), client).run_compaction(
            {"compaction_mode": "previous_response_id"}
        )
    assert compaction_api.bodies == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "input"),  # no response id known
        ({"response_id": "resp_1"}, "previous_response_id"),
        ({"response_id": "resp_1", "store": True}, "previous_response_id"),
        ({"response_id": "resp_1", "store": False}, "input"),
    ],
)
async def test_auto_mode_picks_input_or_response_id(
    client: AsyncOpenAI,
    compaction_api: FakeCompactionAPI,
    fake_openai: FakeOpenAIServer,
    args: dict[str, Any],
    expected: str,
) -> None:
    await serve(client, fake_openai, "resp_1", turns(2))
    session = wrap(MemorySession(items=turns(2)), client)
    await session.run_compaction({**args, "force": True})  # type: ignore[typeddict-item]
    body = compaction_api.bodies[0]
    if expected == "input":
        assert body == {"model": MODEL, "input": turns(2)}
    else:
        assert body == {"model": MODEL, "previous_response_id": "resp_1"}


async def test_auto_mode_remembers_an_unstored_response(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI, fake_openai: FakeOpenAIServer
) -> None:
    session = wrap(MemorySession(items=turns(2)), client)
    await session.run_compaction({"response_id": "resp_1", "store": False})  # not triggered
    await session.run_compaction({"force": True})
    assert "input" in compaction_api.bodies[0]
    await session.add_items(turns(1))
    await serve(client, fake_openai, "resp_2", await session.get_items())
    await session.run_compaction({"response_id": "resp_2", "force": True})  # a new response
    assert compaction_api.bodies[1] == {"model": MODEL, "previous_response_id": "resp_2"}


async def test_an_explicit_mode_in_args_wins(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    session = wrap(MemorySession(items=turns(2)), client, compaction_mode="previous_response_id")
    await session.run_compaction({"response_id": "r", "compaction_mode": "input", "force": True})
    assert "input" in compaction_api.bodies[0]


# -- the trigger ----------------------------------------------------------------------------------


async def test_default_trigger_fires_at_ten_candidate_items(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(9))
    session = wrap(store, client)
    assert await session.run_compaction() is None  # 9 assistant messages: not yet
    # User messages and compaction items do not count.
    await session.add_items([user("x"), {"type": "compaction", "encrypted_content": "old"}])
    assert await session.run_compaction() is None
    assert compaction_api.bodies == []
    await session.add_items([assistant("tenth")])
    assert await session.run_compaction() is not None
    assert len(compaction_api.bodies) == 1
    # After compaction only user messages and a compaction item remain: no candidates left.
    assert await session.run_compaction() is None
    assert len(compaction_api.bodies) == 1


async def test_force_compacts_below_the_threshold(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    session = wrap(MemorySession(items=turns(1)), client)
    assert await session.run_compaction() is None
    assert await session.run_compaction({"force": True}) is not None
    assert len(compaction_api.bodies) == 1


async def test_custom_trigger_receives_the_context(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    seen: list[CompactionTriggerContext] = []

    def trigger(context: CompactionTriggerContext) -> bool:
        seen.append(copy.deepcopy(context))
        return len(context["session_items"]) >= 4

    history = [user("q"), assistant("a"), call("c1"), output("c1")]
    session = wrap(MemorySession(items=history[:2]), client, should_trigger_compaction=trigger)
    assert await session.run_compaction({"response_id": "resp_1", "store": True}) is None
    assert seen[0] == {
        "response_id": "resp_1",
        "compaction_mode": "previous_response_id",
        "compaction_candidate_items": [assistant("a")],
        "session_items": history[:2],
    }
    await session.add_items(history[2:])
    assert await session.run_compaction({"response_id": "resp_2", "store": False}) is not None
    assert seen[1]["compaction_mode"] == "input"
    assert seen[1]["compaction_candidate_items"] == history[1:]
    assert compaction_api.bodies == [{"model": MODEL, "input": history}]


async def test_async_trigger_is_awaited(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    async def trigger(context: CompactionTriggerContext) -> bool:
        await asyncio.sleep(0)
        return True

    session = wrap(MemorySession(items=turns(1)), client, should_trigger_compaction=trigger)
    assert await session.run_compaction() is not None


# -- all or nothing ------------------------------------------------------------------------------


async def test_api_error_leaves_the_history_untouched(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    before = copy.deepcopy(store.items)
    compaction_api.fail_next(FakeReply(status=500))
    with pytest.raises(SessionError, match="history is unchanged") as caught:
        await wrap(store, client).run_compaction()
    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert store.items == before
    assert "clear_session" not in store.methods


async def test_timeout_leaves_the_history_untouched(
    fake_openai: FakeOpenAIServer, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    before = copy.deepcopy(store.items)
    compaction_api.fail_next(FakeReply(delay=2.0, body={}))
    async with fake_openai.async_client(timeout=0.3) as slow_client:
        with pytest.raises(SessionError) as caught:
            await wrap(store, slow_client).run_compaction()
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)
    assert store.items == before


async def test_cancellation_during_the_api_call_leaves_the_history_untouched(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    before = copy.deepcopy(store.items)
    compaction_api.fail_next(FakeReply(delay=1.0, body={}))
    task = asyncio.create_task(wrap(store, client).run_compaction())
    await eventually(lambda: compaction_api.bodies, "the compact request to reach the server")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.items == before


async def test_cancellation_mid_replacement_restores_the_previous_history(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    before = copy.deepcopy(store.items)
    writing = asyncio.Event()

    async def hang(items: list[Any]) -> None:
        writing.set()  # the history is cleared and the compacted items are being written
        await asyncio.sleep(30)

    store.before_add = hang
    task = asyncio.create_task(wrap(store, client).run_compaction())
    await asyncio.wait_for(writing.wait(), 10)
    assert store.items == []  # mid-replacement
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.items == before


async def test_failed_write_mid_replacement_restores_the_previous_history(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    before = copy.deepcopy(store.items)

    def fail(items: list[Any]) -> None:
        raise OSError("disk full")

    store.before_add = fail
    with pytest.raises(SessionStorageError, match="previous history was restored") as caught:
        await wrap(store, client).run_compaction()
    assert isinstance(caught.value.__cause__, OSError)
    assert store.items == before


async def test_repeated_cancellation_cannot_interrupt_the_restore(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    before = copy.deepcopy(store.items)
    writing = asyncio.Event()
    restoring = asyncio.Event()

    async def hang(items: list[Any]) -> None:
        writing.set()
        await asyncio.sleep(30)

    async def slow_restore(items: list[Any]) -> None:
        restoring.set()
        await asyncio.sleep(0.2)

    store.before_add = hang
    task = asyncio.create_task(wrap(store, client).run_compaction())
    await asyncio.wait_for(writing.wait(), 10)
    store.before_add = None
    task.cancel()
    await asyncio.sleep(0)
    store.before_add = slow_restore
    for _ in range(5):
        await asyncio.sleep(0.02)
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert restoring.is_set()
    assert store.items == before


async def test_a_failed_restore_says_so(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))

    def fail(items: list[Any]) -> bool:
        store.before_add = fail  # stays installed: the restore fails too
        raise OSError("disk gone")

    store.before_add = fail
    with pytest.raises(SessionStorageError, match="restoring its 20 previous items failed too"):
        await wrap(store, client).run_compaction()


# -- concurrency and tool calls -------------------------------------------------------------------


async def test_items_added_during_the_api_call_survive(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    session = wrap(store, client)
    compaction_api.fail_next(slow_compaction(0.5, item_id="cmp_1"))
    added = [user(f"during {n}") for n in range(5)]
    task = await compaction_in_flight(session, compaction_api)
    await asyncio.gather(*(session.add_items([item]) for item in added))
    await task
    items = await session.get_items()
    assert items[0] == {"type": "compaction", "id": "cmp_1", "encrypted_content": "s"}
    assert sorted(i["content"] for i in items[1:]) == sorted(i["content"] for i in added)
    assert len(items) == 6


async def test_a_pending_tool_call_is_kept_with_everything_after_it(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    history = [
        *turns(5),
        call("c1"),
        output("c1"),
        assistant("used c1"),
        call("c2"),
        assistant("x"),
    ]
    store = MemorySession(items=history)
    session = wrap(store, client, compaction_mode="input")
    await session.run_compaction({"force": True})
    prefix = history[:13]  # up to and including "used c1"
    assert compaction_api.bodies == [{"model": MODEL, "input": prefix}]
    items = await session.get_items()
    assert (
        items[-3:]
        == [
            {"type": "compaction", "id": items[-3]["id"], "encrypted_content": "compacted:13"},
            call("c2"),
            assistant("x"),
        ][-3:]
    )
    # The pending call kept its place, and no output is left without its call.
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    assert outputs <= calls
    # Once the output arrives, the whole history can be compacted.
    await session.add_items([output("c2")])
    await session.run_compaction({"force": True})
    assert not any(i.get("type", "").startswith("function_call") for i in await session.get_items())


async def test_previous_response_id_mode_waits_for_pending_tool_outputs(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=[*turns(10), call("c1")])
    session = wrap(store, client, compaction_mode="previous_response_id")
    assert await session.run_compaction({"response_id": "resp_1", "force": True}) is None
    assert compaction_api.bodies == []
    assert len(store.items) == 21


@pytest.mark.parametrize(
    "tail",
    [
        [call("c1")],  # the call waits for its output
        [call("c1"), output("c1")],  # the output was stored after the response
        [user("and now?")],  # a message the response has not seen
    ],
)
async def test_auto_mode_defers_what_the_latest_response_does_not_cover(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI, tail: list[Any]
) -> None:
    history = [*turns(10), *tail]
    store = MemorySession(items=history)
    session = wrap(store, client)
    # Triggered (10 answers), but the chain of resp_1 lacks the tail: wait for the next response.
    assert await session.run_compaction({"response_id": "resp_1"}) is None
    assert compaction_api.bodies == []
    # Forced: the stored items go as input instead, up to the safe boundary.
    assert await session.run_compaction({"response_id": "resp_1", "force": True}) is not None
    keep = 20 if tail == [call("c1")] else len(history)
    assert compaction_api.bodies == [{"model": MODEL, "input": history[:keep]}]


async def test_auto_mode_compacts_the_chain_once_the_answer_is_stored(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI, fake_openai: FakeOpenAIServer
) -> None:
    store = MemorySession(items=[*turns(9), call("c1"), output("c1")])
    session = wrap(store, client)
    assert await session.run_compaction({"response_id": "resp_1"}) is None  # deferred
    await session.add_items([assistant("with the tool's answer")])
    await serve(client, fake_openai, "resp_2", store.items[:-1])
    assert await session.run_compaction({"response_id": "resp_2"}) is not None
    assert compaction_api.bodies == [{"model": MODEL, "previous_response_id": "resp_2"}]


async def test_a_history_that_changed_during_the_call_is_not_overwritten(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store = MemorySession(items=turns(10))
    session = wrap(store, client)
    compaction_api.fail_next(slow_compaction(0.4, input_tokens=5))
    task = await compaction_in_flight(session, compaction_api)
    await session.pop_item()
    expected = copy.deepcopy(store.items)
    usage = await task
    assert usage is not None
    assert usage.total_tokens == 6
    assert store.items == expected


# -- construction --------------------------------------------------------------------------------


def test_bad_arguments_are_clear_errors() -> None:
    store = MemorySession()
    with pytest.raises(ValueError, match="compaction_mode must be one of"):
        OpenAIResponsesCompactionSession("s", store, compaction_mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model"):
        OpenAIResponsesCompactionSession("s", store, model=" ")
    with pytest.raises(TypeError, match="should_trigger_compaction"):
        OpenAIResponsesCompactionSession("s", store, should_trigger_compaction=10)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="must be a Session"):
        OpenAIResponsesCompactionSession("s", object())  # type: ignore[arg-type]
    session = OpenAIResponsesCompactionSession("s", store)
    with pytest.raises(UserError, match="cannot wrap another"):
        OpenAIResponsesCompactionSession("s", session)


async def test_bad_run_compaction_args_are_clear_errors() -> None:
    session = OpenAIResponsesCompactionSession("s", MemorySession())
    with pytest.raises(TypeError, match="unknown run_compaction argument"):
        await session.run_compaction({"forced": True})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ValueError, match="compaction_mode"):
        await session.run_compaction({"compaction_mode": "later"})  # type: ignore[typeddict-item]


async def test_it_is_a_compaction_aware_session_that_delegates() -> None:
    store = MemorySession(items=turns(1))
    session = OpenAIResponsesCompactionSession("s", store)
    assert is_openai_responses_compaction_aware_session(session)
    assert await session.get_items(1) == [assistant("answer 0")]
    await session.add_items([user("u")])
    assert await session.pop_item() == user("u")
    session.session_settings = None
    await session.clear_session()
    assert store.items == []
    assert await session.run_compaction({"force": True}) is None  # nothing to compact, no call


async def test_the_default_model_is_the_agents_default(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_DEFAULT_MODEL", raising=False)
    session = OpenAIResponsesCompactionSession("s", MemorySession(items=turns(1)), client=client)
    await session.run_compaction({"force": True})
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "o3")
    session = OpenAIResponsesCompactionSession("s", MemorySession(items=turns(1)), client=client)
    await session.run_compaction({"force": True})
    assert [body["model"] for body in compaction_api.bodies] == [DEFAULT_MODEL, "o3"]


async def test_the_default_model_is_read_when_the_session_is_created(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sessions.md and compaction.md: `$OPENAI_DEFAULT_MODEL` is read when the session is
    created, not at each compaction."""
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "o3")
    session = OpenAIResponsesCompactionSession("s", MemorySession(items=turns(1)), client=client)
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "o4-mini")
    await session.run_compaction({"force": True})
    assert [body["model"] for body in compaction_api.bodies] == ["o3"]


async def test_input_mode_sends_items_without_bookkeeping_keys(
    client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    tool_call = {**call("c1"), "_agents_tool_title": "Lookup"}
    answer = {**assistant("done"), "created_by": "resp_1"}
    session = wrap(MemorySession(items=[user("q"), tool_call, output("c1"), answer]), client)
    await session.run_compaction({"force": True})
    assert compaction_api.bodies[0]["input"] == [
        user("q"),
        call("c1"),
        output("c1"),
        assistant("done"),
    ]


async def test_an_empty_compaction_result_never_empties_the_history(
    fake_openai: FakeOpenAIServer, client: AsyncOpenAI
) -> None:
    FakeCompactionAPI(output=lambda body: []).install(fake_openai)
    store = MemorySession(items=turns(10))
    assert await wrap(store, client).run_compaction() is not None
    assert store.items == turns(10)
