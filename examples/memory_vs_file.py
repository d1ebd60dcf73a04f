"""In memory vs a file: a file-backed session survives reopening, an in-memory one does not.

Run with an API key: OPENAI_API_KEY=sk-... python examples/memory_vs_file.py [DB_PATH]
(the database file defaults to ./conversations.db).
"""

from __future__ import annotations

import asyncio
import sys

from turnstore import Agent, Runner, SQLiteSession


async def main(db_path: str) -> None:
    agent = Agent(name="Assistant", instructions="Reply very concisely.")

    async with SQLiteSession("temporary") as in_memory:
        await Runner.run(agent, "Remember the number 7.", session=in_memory)
    async with SQLiteSession("temporary") as in_memory:  # a new, empty in-memory database
        print(f"in memory, after reopening: {len(await in_memory.get_items())} items")

    async with SQLiteSession("persistent", db_path) as on_disk:
        await Runner.run(agent, "Remember the number 7.", session=on_disk)
    async with SQLiteSession("persistent", db_path) as on_disk:  # the same file, reopened
        print(f"in {db_path}, after reopening: {len(await on_disk.get_items())} items")
        result = await Runner.run(agent, "Which number did I ask you to remember?", session=on_disk)
        print(f"assistant: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "conversations.db"))
