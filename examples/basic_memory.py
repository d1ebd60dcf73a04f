"""Basic memory: three turns on one session; each remembers the ones before.

Try it without an API key, against the bundled fake OpenAI server (its replies
quote the user messages they received: you see the history the model got):

    # in one shell (activate the virtual environment in both)
    python -m turnstore.testing.fake_openai --port 8787
    # in another: paste the first line the server printed, or
    eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"
    python examples/basic_memory.py

With a real key:

    OPENAI_API_KEY=sk-... python examples/basic_memory.py
"""

from __future__ import annotations

import asyncio

from turnstore import Agent, Runner, SQLiteSession


async def main() -> None:
    agent = Agent(name="Assistant", instructions="Reply very concisely.")
    async with SQLiteSession("conversation_123") as session:  # in memory
        for question in (
            "What city is the Golden Gate Bridge in?",
            "What state is it in?",
            "What is the population of that state?",
        ):
            result = await Runner.run(agent, question, session=session)
            print(f"user: {question}\nassistant: {result.final_output}\n")
        print(f"{len(await session.get_items())} items stored")


if __name__ == "__main__":
    asyncio.run(main())
