"""Manual history with `to_input_list()` beside the same history in a session.

Try it without an API key, against the bundled fake OpenAI server (its replies
quote the user messages they received: you see the history the model got):

    # in one shell (activate the virtual environment in both)
    python -m turnstore.testing.fake_openai --port 8787
    # in another: paste the first line the server printed, or
    eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"
    python examples/manual_vs_session.py

With a real key:

    OPENAI_API_KEY=sk-... python examples/manual_vs_session.py
"""

from __future__ import annotations

import asyncio

from turnstore import Agent, Runner, SQLiteSession, TResponseInputItem


async def main() -> None:
    agent = Agent(name="Assistant", instructions="Reply very concisely.")
    first, second = (
        "What city is the Golden Gate Bridge in?",
        "What state is it in?",
    )

    # Manual: carry the history yourself.
    result = await Runner.run(agent, first)
    next_input: list[TResponseInputItem] = [
        *result.to_input_list(),
        {"role": "user", "content": second},
    ]
    result = await Runner.run(agent, next_input)
    carried = len(result.to_input_list())
    print(f"manual: {result.final_output} ({carried} items carried)")

    # Session: the runner loads and saves the history.
    async with SQLiteSession("manual-vs-session") as session:
        await Runner.run(agent, first, session=session)
        result = await Runner.run(agent, second, session=session)
        stored = len(await session.get_items())
        print(f"session: {result.final_output} ({stored} items stored)")


if __name__ == "__main__":
    asyncio.run(main())
