"""A run of several turns (tool calls) through the compaction session reads the stored history
once, at its start, as the same run without compaction does, while compaction is not due; the
turn that makes it due reads it for the compaction. Real runs, real `openai` client, fake server."""

from __future__ import annotations

from openai import AsyncOpenAI

from support.sessions import MemorySession
from support.tools import lookup
from turnstore import (
    Agent,
    CompactionTriggerContext,
    OpenAIResponsesCompactionSession,
    RunConfig,
    Runner,
)
from turnstore.testing import (
    FakeCompactionAPI,
    FakeOpenAIServer,
    text_response,
    tool_call_response,
)


def _three_turns(fake_openai: FakeOpenAIServer, run: int) -> None:
    fake_openai.enqueue(
        tool_call_response("lookup", {"key": "a"}, call_id=f"c{run}a"),
        tool_call_response("lookup", {"key": "b"}, call_id=f"c{run}b"),
        text_response(f"answer {run}", response_id=f"r{run}"),
    )


async def test_multi_turn_runs_read_once_until_compaction_is_due(
    fake_openai: FakeOpenAIServer, compaction_api: FakeCompactionAPI, client: AsyncOpenAI
) -> None:
    config = RunConfig(openai_client=client)
    agent = Agent(name="A", tools=[lookup])
    due_at = 12  # candidate items: each run of three turns writes five

    def due(context: CompactionTriggerContext) -> bool:
        return len(context["compaction_candidate_items"]) >= due_at

    plain, wrapped = MemorySession(), MemorySession()
    session = OpenAIResponsesCompactionSession(
        "u", wrapped, client=client, should_trigger_compaction=due
    )
    reads: list[tuple[int, int]] = []
    for run in range(3):
        for target in (plain, session):
            _three_turns(fake_openai, run)
            store = plain if target is plain else wrapped
            before = store.methods.count("get_items")
            await Runner.run(agent, f"question {run}", session=target, run_config=config)
            reads.append((run, store.methods.count("get_items") - before))
    # Runs 0 and 1 (10 candidates): the run's own read only, with or without compaction.
    assert reads[:4] == [(0, 1), (0, 1), (1, 1), (1, 1)]
    # Run 2 reaches 12 at its first turn: due, so the compaction reads the history (this store
    # has no atomic replacement: it reads, replaces and reads again to verify).
    assert reads[4] == (2, 1)
    assert reads[5][1] > 1
    assert len(compaction_api.bodies) == 1
    # Counting starts again from what the compaction wrote: three turns, one read.
    _three_turns(fake_openai, 3)
    before = wrapped.methods.count("get_items")
    await Runner.run(agent, "question 3", session=session, run_config=config)
    assert wrapped.methods.count("get_items") - before == 1
    assert len(compaction_api.bodies) == 1
