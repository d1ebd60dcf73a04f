"""Correcting a message: pop items until the question is gone, then ask again.

Try it without an API key, against the bundled fake OpenAI server (its replies
quote the user messages they received: you see the history the model got):

    # in one shell (activate the virtual environment in both)
    python -m turnstore.testing.fake_openai --port 8787
    # in another: paste the first line the server printed, or
    eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"
    python examples/message_correction.py

With a real key:

    OPENAI_API_KEY=sk-... python examples/message_correction.py
"""

from __future__ import annotations

import asyncio

from turnstore import Agent, Runner, SQLiteSession


async def main() -> None:
    agent = Agent(name="Assistant", instructions="Reply very concisely.")
    async with SQLiteSession("correction") as session:
        result = await Runner.run(agent, "What's 2 + 2?", session=session)
        print(f"assistant: {result.final_output}")

        # The user meant another question. Pop items until the question is gone:
        # an answer may hold several items (reasoning, tool calls and outputs).
        while (item := await session.pop_item()) is not None:
            if item.get("role") == "user":
                break
        question = item.get("content") if item is not None else None
        print(f"removed: {question!r} and its answer")

        result = await Runner.run(agent, "What's 2 + 3?", session=session)
        print(f"assistant: {result.final_output}")
        print(f"{len(await session.get_items())} items stored")


if __name__ == "__main__":
    asyncio.run(main())
