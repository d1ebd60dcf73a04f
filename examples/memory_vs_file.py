"""In memory vs a file: only a session in a file survives reopening.

Try it without an API key, against the bundled fake OpenAI server (its replies
quote the user messages they received: you see the history the model got):

    # in one shell (activate the virtual environment in both)
    python -m turnstore.testing.fake_openai --port 8787
    # in another: paste the first line the server printed, or
    eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"
    python examples/memory_vs_file.py [DB_PATH]

With a real key:

    OPENAI_API_KEY=sk-... python examples/memory_vs_file.py [DB_PATH]

The database file defaults to ./conversations.db.
"""

from __future__ import annotations

import asyncio
import sys

from turnstore import Agent, Runner, SQLiteSession


async def main(db_path: str) -> None:
    agent = Agent(name="Assistant", instructions="Reply very concisely.")

    async with SQLiteSession("temporary") as in_memory:
        await Runner.run(agent, "Remember the number 7.", session=in_memory)
    # Reopened: a new, empty in-memory database.
    async with SQLiteSession("temporary") as in_memory:
        count = len(await in_memory.get_items())
        print(f"in memory, after reopening: {count} items")

    async with SQLiteSession("persistent", db_path) as on_disk:
        await Runner.run(agent, "Remember the number 7.", session=on_disk)
    # Reopened: the same file.
    async with SQLiteSession("persistent", db_path) as on_disk:
        count = len(await on_disk.get_items())
        print(f"in {db_path}, after reopening: {count} items")
        result = await Runner.run(
            agent, "Which number did I ask you to remember?", session=on_disk
        )
        print(f"assistant: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "conversations.db"))
