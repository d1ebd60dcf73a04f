"""Runner overhead per turn: our Runner + SQLiteSession against the OpenAI Agents SDK's Runner +
its SQLiteSession, both with scripted models (no network), measured in the same process.

    .venv/bin/python bench/bench_runner.py [TURNS]

Prints the median time of a whole run (load history, merge, save input, model, save turn) for
each side and the ratio ours / SDK. A ratio below 1 means our runner adds less per turn.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import agents
import agents.testing

from turnstore import Agent, Runner, SQLiteSession
from turnstore.testing import ScriptedModel


async def ours(turns: int, db: Path) -> list[float]:
    model = ScriptedModel([f"answer {i}" for i in range(turns)])
    agent = Agent(name="bench", model=model)
    times: list[float] = []
    async with SQLiteSession("bench", db) as session:
        for i in range(turns):
            start = time.perf_counter()
            await Runner.run(agent, f"question {i}", session=session)
            times.append(time.perf_counter() - start)
    return times


async def sdk(turns: int, db: Path) -> list[float]:
    scripted = agents.testing
    model = scripted.ScriptedModel(
        [[scripted.assistant_message(f"answer {i}", item_id=f"m{i}")] for i in range(turns)]
    )
    agent = agents.Agent(name="bench", model=model)
    session = agents.SQLiteSession("bench", str(db))
    times: list[float] = []
    try:
        for i in range(turns):
            start = time.perf_counter()
            await agents.Runner.run(agent, f"question {i}", session=session)
            times.append(time.perf_counter() - start)
    finally:
        session.close()
    return times


async def main(turns: int) -> None:
    agents.set_tracing_disabled(True)
    with tempfile.TemporaryDirectory() as folder:
        ours_times = await ours(turns, Path(folder) / "ours.db")
        sdk_times = await sdk(turns, Path(folder) / "sdk.db")
    ours_ms = statistics.median(ours_times) * 1000
    sdk_ms = statistics.median(sdk_times) * 1000
    print(f"turns per side: {turns} (history grows to {2 * turns} items)")
    print(f"turnstore Runner + SQLiteSession: median {ours_ms:.2f} ms per run")
    print(f"openai-agents Runner + SQLiteSession:  median {sdk_ms:.2f} ms per run")
    print(f"ratio ours / SDK: {ours_ms / sdk_ms:.2f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
