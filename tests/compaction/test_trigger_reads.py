"""The compaction trigger counts what is written; the history is read only when compaction is due.

A run reads the history once, at its start. After each saved turn the runner asks the
compaction session whether to compact: that decision is made on the items the session has seen
written through it, without reading the history back. Real runs, real `openai` client, fake
server; the wrapped session records every read.
"""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI

from support.sessions import MemorySession
from turnstore import (
    Agent,
    CompactionTriggerContext,
    OpenAIResponsesCompactionSession,
    RunConfig,
    Runner,
)
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer, text_response


def _reads(store: MemorySession) -> int:
    return store.methods.count("get_items")


async def test_only_the_runs_own_read_until_compaction_is_due(
    fake_openai: FakeOpenAIServer, compaction_api: FakeCompactionAPI, client: AsyncOpenAI
) -> None:
    store = MemorySession()
    session = OpenAIResponsesCompactionSession("u", store, client=client)
    config = RunConfig(openai_client=client)
    agent = Agent(name="A")
    fake_openai.enqueue(*(text_response(f"answer {n}", response_id=f"r{n}") for n in range(12)))

    per_run: list[int] = []
    for n in range(9):
        before = _reads(store)
        await Runner.run(agent, f"question {n}", session=session, run_config=config)
        per_run.append(_reads(store) - before)
    assert per_run == [1] * 9  # the run's own load; nothing read back: 9 answers < 10
    assert compaction_api.bodies == []

    # A pop and a clear through the session keep the count right without a read.
    popped = await session.pop_item()
    assert popped is not None
    await session.add_items([popped])
    before = _reads(store)
    await Runner.run(agent, "question 9", session=session, run_config=config)
    assert _reads(store) - before > 1  # the tenth answer: due, so the history is read
    assert len(compaction_api.bodies) == 1
    # The chain of the tenth response is compacted: its ten questions stay, then one item.
    assert [item.get("role") or item.get("type") for item in store.items] == [
        *["user"] * 10,
        "compaction",
    ]

    before = _reads(store)
    await Runner.run(agent, "question 10", session=session, run_config=config)
    assert _reads(store) - before == 1  # counting starts again after the compaction


async def test_a_custom_trigger_sees_the_written_history_without_a_read(
    fake_openai: FakeOpenAIServer, compaction_api: FakeCompactionAPI, client: AsyncOpenAI
) -> None:
    seen: list[tuple[int, int]] = []

    def trigger(context: CompactionTriggerContext) -> bool:
        seen.append((len(context["session_items"]), len(context["compaction_candidate_items"])))
        return False

    store = MemorySession()
    session = OpenAIResponsesCompactionSession(
        "u", store, client=client, should_trigger_compaction=trigger
    )
    config = RunConfig(openai_client=client)
    fake_openai.enqueue(*(text_response(f"a{n}") for n in range(3)))
    for n in range(3):
        await Runner.run(Agent(name="A"), f"q{n}", session=session, run_config=config)
    assert seen == [(2, 1), (4, 2), (6, 3)]
    assert _reads(store) == 3  # one load per run, nothing read back


async def test_items_written_elsewhere_are_counted_when_the_history_is_read(
    fake_openai: FakeOpenAIServer, compaction_api: FakeCompactionAPI, client: AsyncOpenAI
) -> None:
    store = MemorySession()
    session = OpenAIResponsesCompactionSession("u", store, client=client)
    assert await session.get_items() == []  # the session knows the history: empty
    # Written to the wrapped session directly: this object does not see them ...
    answer: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "x", "annotations": []}],
    }
    store.items += [answer] * 12
    fake_openai.enqueue(text_response("answer", response_id="r0"))
    await client.responses.create(model="gpt-5.5", input=store.items)
    assert await session.run_compaction({"response_id": "r0"}) is None
    assert compaction_api.bodies == []
    # ... until a forced compaction (or a due one) reads the history.
    assert await session.run_compaction({"response_id": "r0", "force": True}) is not None
    assert len(compaction_api.bodies) == 1
