"""Compaction: a long conversation whose stored history stays short.

After each model call the runner asks the session whether to compact. Here the
trigger fires once four answers are stored; the stored items are then replaced
by the user messages and one encrypted `compaction` item, and the replaced items
move to SQLite's archive.

Try it without an API key, against the bundled fake OpenAI server (its replies
quote the user messages they received: you see the history the model got):

    # in one shell (activate the virtual environment in both)
    python -m turnstore.testing.fake_openai --port 8787
    # in another: paste the first line the server printed, or
    eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"
    python examples/compaction.py

With a real key:

    OPENAI_API_KEY=sk-... python examples/compaction.py
"""

from __future__ import annotations

import asyncio

from openai import AsyncOpenAI

from turnstore import (
    Agent,
    CompactionTriggerContext,
    OpenAIResponsesCompactionSession,
    RunConfig,
    Runner,
    SQLiteSession,
)


def four_answers(context: CompactionTriggerContext) -> bool:
    return len(context["compaction_candidate_items"]) >= 4


async def main() -> None:
    agent = Agent(
        name="Assistant",
        instructions="Reply in one short sentence.",
        model="gpt-4.1",
    )
    async with (
        AsyncOpenAI() as client,
        SQLiteSession("trip_planning") as wrapped,
        OpenAIResponsesCompactionSession(
            "trip_planning",
            wrapped,
            client=client,
            model="gpt-4.1",
            should_trigger_compaction=four_answers,
        ) as session,
    ):
        config = RunConfig(openai_client=client)
        for question in (
            "I am planning a week in Japan in April. Where should I start?",
            "How do I get from there to Kyoto?",
            "What should I see in Kyoto in two days?",
            "Is a rail pass worth it for this trip?",
            "Remind me: which month am I travelling in?",
        ):
            result = await Runner.run(
                agent,
                question,
                session=session,
                run_config=config,
            )
            n = len(await session.get_items())
            tokens = result.usage.total_tokens
            print(f"user: {question}\nassistant: {result.final_output}")
            print(f"  [stored items: {n}, tokens this run: {tokens}]\n")

        # Compact now, whatever the trigger says; the call's usage is returned.
        usage = await session.run_compaction({"force": True})
        if usage is not None:
            print(f"forced compaction used {usage.total_tokens} tokens")
        items = await session.get_items()
        kinds = [item.get("type", "message") for item in items]
        print(f"stored now: {kinds}")
        print(f"archived items: {len(await wrapped.get_archived_items())}")


if __name__ == "__main__":
    asyncio.run(main())
