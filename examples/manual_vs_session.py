"""Manual history with `to_input_list()` next to the same conversation kept by a session.

Run with an API key: OPENAI_API_KEY=sk-... python examples/manual_vs_session.py
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
