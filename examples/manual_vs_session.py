"""Manual history with `to_input_list()` next to the same conversation kept by a session.

Try it without an API key, against the bundled fake OpenAI server (its replies quote the user
messages they received, so you can see the history the model got):

    .venv/bin/python -m turnstore.testing.fake_openai --port 8787     # in one shell
    export OPENAI_BASE_URL=http://127.0.0.1:8787/v1 OPENAI_API_KEY=sk-fake   # in another
    .venv/bin/python examples/manual_vs_session.py

With a real key: OPENAI_API_KEY=sk-... .venv/bin/python examples/manual_vs_session.py
"""

from __future__ import annotations

import asyncio

from turnstore import Agent, Runner, SQLiteSession, TResponseInputItem


async def main() -> None:
    agent = Agent(name="Assistant", instructions="Reply very concisely.")
    first, second = "What city is the Golden Gate Bridge in?", "What state is it in?"

    # Manual: carry the history yourself.
    result = await Runner.run(agent, first)
    next_input: list[TResponseInputItem] = [
        *result.to_input_list(),
        {"role": "user", "content": second},
    ]
    result = await Runner.run(agent, next_input)
    print(f"manual: {result.final_output} ({len(result.to_input_list())} items carried)")

    # Session: the runner loads and saves the history.
    async with SQLiteSession("manual-vs-session") as session:
        await Runner.run(agent, first, session=session)
        result = await Runner.run(agent, second, session=session)
        print(f"session: {result.final_output} ({len(await session.get_items())} items stored)")


if __name__ == "__main__":
    asyncio.run(main())
