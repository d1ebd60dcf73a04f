"""Several isolated sessions: two users share a database file, not histories.

Try it without an API key, against the bundled fake OpenAI server (its replies
quote the user messages they received: you see the history the model got):

    # in one shell (activate the virtual environment in both)
    python -m turnstore.testing.fake_openai --port 8787
    # in another: paste the first line the server printed, or
    eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"
    python examples/isolated_sessions.py

With a real key:

    OPENAI_API_KEY=sk-... python examples/isolated_sessions.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from turnstore import Agent, Runner, SQLiteSession


async def main() -> None:
    agent = Agent(name="Assistant", instructions="Reply very concisely.")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "users.db"
        async with (
            SQLiteSession("alice", db) as alice,
            SQLiteSession("bob", db) as bob,
        ):
            await Runner.run(
                agent, "My favourite colour is green.", session=alice
            )
            await Runner.run(agent, "My favourite colour is red.", session=bob)
            for name, session in (("alice", alice), ("bob", bob)):
                result = await Runner.run(
                    agent, "What is my favourite colour?", session=session
                )
                print(f"{name}: {result.final_output}")
            counts = [len(await s.get_items()) for s in (alice, bob)]
            print(f"alice has {counts[0]} items, bob {counts[1]}")


if __name__ == "__main__":
    asyncio.run(main())
