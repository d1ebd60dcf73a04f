"""How the runner uses a session: what it reads, merges, saves per turn and keeps on failure."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses import ResponseUsage

from support.sessions import MemorySession
from support.tools import lookup
from turnstore import (
    Agent,
    MaxTurnsExceeded,
    ModelBehaviorError,
    RunConfig,
    Runner,
    SessionSettings,
    SQLiteSession,
    TResponseInputItem,
    UserError,
    function_tool,
)
from turnstore.testing import ScriptedModel, response_body, tool_call_response


def roles(items: list[TResponseInputItem]) -> list[str]:
    return [str(item.get("role") or item.get("type")) for item in items]


# sessions the runner refuses --------------------------------------------------------------------


@pytest.mark.parametrize(
    "option", [{"previous_response_id": "resp_1"}, {"conversation_id": "conv_1"}]
)
async def test_a_session_with_server_state_is_rejected_before_any_call(
    option: dict[str, Any],
) -> None:
    model = ScriptedModel(["never"])
    session = MemorySession()
    with pytest.raises(UserError, match="session cannot be combined"):
        await Runner.run(Agent(name="A", model=model), "hi", session=session, **option)
    with pytest.raises(UserError, match="session cannot be combined"):
        Runner.run_streamed(Agent(name="A", model=model), "hi", session=session, **option)
    assert model.calls == []
    assert session.calls == []


# the history limit ------------------------------------------------------------------------------


async def test_the_run_configs_history_limit_overrides_the_sessions_settings() -> None:
    session = MemorySession(session_settings=SessionSettings(limit=3))
    await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(6)])
    session.calls.clear()
    model = ScriptedModel(["a", "b", "c"])
    agent = Agent(name="A", model=model)

    await Runner.run(agent, "new", session=session)
    assert session.calls[0] == ("get_items", 3)
    assert [i["content"] for i in model.last_call.input][:3] == ["m3", "m4", "m5"]

    session.calls.clear()
    config = RunConfig(session_settings={"limit": 1})
    await Runner.run(agent, "newer", session=session, run_config=config)
    assert session.calls[0] == ("get_items", 1)
    assert len(model.last_call.input) == 2

    session.session_settings = None
    session.calls.clear()
    await Runner.run(agent, "all", session=session)
    assert session.calls[0] == ("get_items", None)


async def test_a_run_reads_once_or_in_growing_reads_with_a_turn_or_token_limit() -> None:
    """sessions.md, How it works: the history is read before the input is saved, usually in one
    `get_items` call; with a turn or token limit, in a few reads, each larger than the last."""
    session = MemorySession()
    await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(300)])
    agent = Agent(name="A", model=ScriptedModel(["a", "b", "c"]))

    def reads() -> list[Any]:
        first_write = session.methods.index("add_items")
        assert "get_items" not in session.methods[first_write:]
        return [arg for name, arg in session.calls[:first_write] if name == "get_items"]

    session.calls.clear()
    await Runner.run(agent, "all", session=session)
    assert reads() == [None]

    for limits in ({"limit_turns": 200}, {"limit_tokens": 10**6}):
        session.calls.clear()
        config = RunConfig(session_settings=limits)
        await Runner.run(agent, "window", session=session, run_config=config)
        sizes = reads()
        assert 1 < len(sizes) <= 4, sizes
        assert sizes == sorted(set(sizes)), sizes  # each read larger than the last


# merging history and new input ------------------------------------------------------------------


async def test_the_default_merge_puts_history_before_the_new_input() -> None:
    session = SQLiteSession("s3")
    await session.add_items([{"role": "user", "content": "old"}])
    model = ScriptedModel(["x", "y"])
    agent = Agent(name="A", model=model)
    await Runner.run(agent, "text input", session=session)
    assert model.last_call.input[-1] == {"role": "user", "content": "text input"}
    await Runner.run(
        agent,
        [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
        session=session,
    )
    assert [i.get("content") for i in model.last_call.input][-2:] == ["one", "two"]
    assert model.last_call.input[0] == {"role": "user", "content": "old"}
    await session.aclose()


@pytest.mark.parametrize("is_async", [False, True])
async def test_the_input_callback_rewrites_the_input_and_receives_copies(is_async: bool) -> None:
    session = SQLiteSession("s3cb")
    await session.add_items([{"role": "user", "content": f"h{i}"} for i in range(4)])
    seen: list[tuple[list[Any], list[Any]]] = []

    def merge(history: list[Any], new_items: list[Any]) -> list[Any]:
        seen.append((history, new_items))
        history[0]["content"] = "mutated by the callback"  # must not reach the session
        return [*new_items, *history[-1:]]

    async def amerge(history: list[Any], new_items: list[Any]) -> list[Any]:
        return merge(history, new_items)

    model = ScriptedModel(["ok"])
    config = RunConfig(session_input_callback=amerge if is_async else merge)
    await Runner.run(Agent(name="A", model=model), "now", session=session, run_config=config)
    assert [i["content"] for i in model.last_call.input] == ["now", "h3"]
    stored = await session.get_items()
    assert stored[0]["content"] == "h0"
    assert [i.get("content") for i in stored[:5]] == ["h0", "h1", "h2", "h3", "now"]
    assert len(seen) == 1
    await session.aclose()


async def test_items_the_callback_makes_up_are_saved_once_in_the_order_returned() -> None:
    # SessionInputCallback: everything it returns that is not history is saved once, in order.
    session = SQLiteSession("s3made")
    await session.add_items([{"role": "user", "content": "h1"}])
    note = {"role": "system", "content": "note"}

    def merge(history: list[Any], new_items: list[Any]) -> list[Any]:
        return [dict(note), *new_items, *new_items, *history]

    model = ScriptedModel(["ok"])
    config = RunConfig(session_input_callback=merge)
    await Runner.run(Agent(name="A", model=model), "now", session=session, run_config=config)
    assert [i["content"] for i in model.last_call.input] == ["note", "now", "now", "h1"]
    stored = await session.get_items()
    assert [i.get("content") for i in stored[:3]] == ["h1", "note", "now"]
    assert len(stored) == 4  # + the answer
    await session.aclose()


async def test_an_input_callback_returning_a_non_list_is_a_clear_error() -> None:
    session = MemorySession()
    model = ScriptedModel(["never"])
    config = RunConfig(session_input_callback=lambda history, new: tuple(history + new))
    with pytest.raises(UserError, match="must return a list of input items, not tuple"):
        await Runner.run(Agent(name="A", model=model), "hi", session=session, run_config=config)
    assert model.calls == []
    assert ("add_items", 1) not in session.calls


# what is saved per turn, and on failure ---------------------------------------------------------


async def test_the_input_is_saved_before_the_first_model_call() -> None:
    session = SQLiteSession("s4a")
    stored_at_call: list[list[TResponseInputItem]] = []

    async def step(request: Any) -> str:
        stored_at_call.append(await session.get_items())
        return "answer"

    await Runner.run(Agent(name="A", model=ScriptedModel([step])), "question", session=session)
    assert stored_at_call == [[{"role": "user", "content": "question"}]]
    await session.aclose()


async def test_one_add_items_per_turn_and_never_a_tool_call_without_its_output() -> None:
    session = MemorySession()
    model = ScriptedModel(
        [
            tool_call_response("lookup", {"key": "a"}),
            tool_call_response("lookup", {"key": "b"}),
            "done",
        ]
    )
    result = await Runner.run(Agent(name="A", model=model, tools=[lookup]), "go", session=session)
    adds = [batch for name, batch in session.writes if name == "add_items"]
    assert [roles(batch) for batch in adds] == [
        ["user"],
        ["function_call", "function_call_output"],
        ["function_call", "function_call_output"],
        ["assistant"],
    ]
    assert result.new_items == [item for batch in adds[1:] for item in batch]


async def test_a_failed_later_turn_keeps_the_completed_turns(tmp_path: Path) -> None:
    db = tmp_path / "s4.db"
    session = SQLiteSession("s4c", db)
    model = ScriptedModel(
        [tool_call_response("lookup", {"key": "a"}), RuntimeError("the model went away")]
    )
    with pytest.raises(RuntimeError, match="went away"):
        await Runner.run(Agent(name="A", model=model, tools=[lookup]), "go", session=session)
    reopened = SQLiteSession("s4c", db)
    assert roles(await reopened.get_items()) == ["user", "function_call", "function_call_output"]
    for s in (session, reopened):
        await s.aclose()


async def test_max_turns_keeps_the_completed_turns() -> None:
    session = SQLiteSession("s4m")
    model = ScriptedModel([tool_call_response("lookup", {"key": str(i)}) for i in range(2)])
    with pytest.raises(MaxTurnsExceeded, match="2 model calls"):
        await Runner.run(
            Agent(name="A", model=model, tools=[lookup]), "go", session=session, max_turns=2
        )
    assert len(await session.get_items()) == 5
    await session.aclose()


async def test_a_cancelled_run_leaves_no_half_turn() -> None:
    session = SQLiteSession("s4x")
    tool_started = asyncio.Event()

    @function_tool
    async def slow(key: str) -> str:
        """Take forever."""
        tool_started.set()
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedModel([tool_call_response("slow", {"key": "a"})])
    task = asyncio.create_task(
        Runner.run(Agent(name="A", model=model, tools=[slow]), "go", session=session)
    )
    await asyncio.wait_for(tool_started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The input was saved; the function call whose tool was cancelled was not.
    assert roles(await session.get_items()) == ["user"]
    await session.aclose()


async def test_a_cancel_during_a_turns_save_finishes_the_save() -> None:
    save_started = asyncio.Event()
    release = asyncio.Event()

    async def gate(batch: list[Any]) -> bool:
        if len(batch) > 1:  # the turn's save, not the input's
            save_started.set()
            await release.wait()
        return True  # stays installed

    session = MemorySession(before_add=gate)
    model = ScriptedModel([tool_call_response("lookup", {"key": "a"})])
    task = asyncio.create_task(
        Runner.run(Agent(name="A", model=model, tools=[lookup]), "go", session=session)
    )
    await asyncio.wait_for(save_started.wait(), 10)
    task.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert roles(session.items) == ["user", "function_call", "function_call_output"]


# saving history once ----------------------------------------------------------------------------


async def test_history_is_never_saved_twice_even_when_the_callback_repeats_it() -> None:
    session = SQLiteSession("s5")
    await session.add_items([{"role": "user", "content": "h1"}, {"role": "user", "content": "h2"}])

    def repeat(history: list[Any], new_items: list[Any]) -> list[Any]:
        rebuilt = [copy.deepcopy(item) for item in history]  # equal content, new objects
        return history + history + rebuilt + new_items

    model = ScriptedModel(["ok"])
    config = RunConfig(session_input_callback=repeat)
    await Runner.run(Agent(name="A", model=model), "new", session=session, run_config=config)
    assert len(model.last_call.input) == 7
    stored = await session.get_items()
    assert [i.get("content") for i in stored[:3]] == ["h1", "h2", "new"]
    assert len(stored) == 4  # + the answer
    await session.aclose()


# a limit that splits a tool call ----------------------------------------------------------------


async def test_a_limit_that_splits_a_tool_call_drops_the_orphan_output() -> None:
    session = SQLiteSession("s6")
    model = ScriptedModel(
        [tool_call_response("lookup", {"key": "a"}, call_id="call_x"), "one", "two"]
    )
    agent = Agent(name="A", model=model, tools=[lookup])
    await Runner.run(agent, "first", session=session)
    # Stored: user, function_call, function_call_output, message. limit=2 keeps output + message.
    config = RunConfig(session_settings=SessionSettings(limit=2))
    await Runner.run(agent, "second", session=session, run_config=config)
    sent = model.last_call.input
    assert roles(sent) == ["assistant", "user"]
    assert all(item.get("type") != "function_call_output" for item in sent)
    # The session itself keeps the output: only the model's input leaves it out.
    assert roles(await session.get_items()) == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
        "assistant",
    ]
    await session.aclose()


# compaction after each saved turn ---------------------------------------------------------------


class CompactionAwareSession(MemorySession):
    def __init__(self, usage: ResponseUsage | None) -> None:
        super().__init__()
        self.compaction_args: list[dict[str, Any]] = []
        self.usage = usage

    async def run_compaction(self, args: Any = None) -> ResponseUsage | None:
        self.compaction_args.append(dict(args or {}))
        self.calls.append(("run_compaction", len(self.items)))
        return self.usage


@pytest.mark.parametrize("usage_tokens", [None, 100])
async def test_a_compaction_aware_session_is_compacted_after_each_saved_turn(
    usage_tokens: int | None,
) -> None:
    usage = (
        None
        if usage_tokens is None
        else ResponseUsage.model_validate(
            {
                "input_tokens": usage_tokens,
                "output_tokens": 10,
                "total_tokens": usage_tokens + 10,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
        )
    )
    session = CompactionAwareSession(usage)
    model = ScriptedModel(
        [
            tool_call_response("lookup", {"key": "a"}, response_id="resp_t1"),
            response_body(
                [
                    {
                        "type": "message",
                        "id": "m",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "done", "annotations": []}],
                    }
                ],
                response_id="resp_t2",
            ),
        ]
    )
    result = await Runner.run(Agent(name="A", model=model, tools=[lookup]), "go", session=session)
    assert session.compaction_args == [
        {"response_id": "resp_t1", "store": True},
        {"response_id": "resp_t2", "store": True},
    ]
    # Each compaction follows the save of its turn.
    assert [c for c in session.calls if c[0] in ("add_items", "run_compaction")] == [
        ("add_items", 1),
        ("add_items", 2),
        ("run_compaction", 3),
        ("add_items", 1),
        ("run_compaction", 4),
    ]
    model_tokens = 2 * 3
    if usage_tokens is None:
        assert result.usage.requests == 2
        assert result.usage.input_tokens == model_tokens
    else:
        assert result.usage.requests == 4
        assert result.usage.input_tokens == model_tokens + 2 * usage_tokens


# one session, several agents --------------------------------------------------------------------


async def test_one_session_shared_by_different_agents_keeps_one_history() -> None:
    session = SQLiteSession("s8")
    triage_model = ScriptedModel(["I will ask the expert."])
    expert_model = ScriptedModel(["The expert answer."])
    triage = Agent(name="Triage", instructions="Route.", model=triage_model)
    expert = Agent(name="Expert", instructions="Answer.", model=expert_model, tools=[lookup])
    await Runner.run(triage, "Question?", session=session)
    result = await Runner.run(expert, "Please answer.", session=session)
    assert result.last_agent is expert
    assert expert_model.last_call.instructions == "Answer."
    assert [
        i.get("content") if i.get("role") == "user" else i["content"][0]["text"]
        for i in expert_model.last_call.input
    ] == [
        "Question?",
        "I will ask the expert.",
        "Please answer.",
    ]
    assert len(await session.get_items()) == 4
    await session.aclose()


# loop errors ------------------------------------------------------------------------------------


async def test_unknown_tool_is_a_model_behavior_error_and_the_turn_is_not_saved() -> None:
    session = SQLiteSession("unknown")
    model = ScriptedModel([tool_call_response("nope", {})])
    with pytest.raises(ModelBehaviorError, match="'nope'"):
        await Runner.run(Agent(name="A", model=model, tools=[lookup]), "go", session=session)
    assert roles(await session.get_items()) == ["user"]
    await session.aclose()
