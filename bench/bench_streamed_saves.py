"""Streamed runs that save each item as it is done: our Runner.run_streamed + SQLiteSession against
the OpenAI Agents SDK's (which saves at the end of each turn), scripted models, same process.

    .venv/bin/python bench/bench_streamed_saves.py [RUNS]

Each run is a tool call, the tool's output and a final answer (two model turns; ours writes the
input, the call, the output and the answer separately). Prints the median time of a whole run
for each side and the ratio ours / SDK: below 1 means ours is faster.
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

from turnstore import Agent, Runner, SQLiteSession, function_tool
from turnstore.testing import ScriptedModel, tool_call_response


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@agents.function_tool
def sdk_lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def ours(runs: int, db: Path) -> list[float]:
    steps: list[object] = []
    for i in range(runs):
        steps += [tool_call_response("lookup", {"key": str(i)}, call_id=f"c{i}"), f"answer {i}"]
    agent = Agent(name="bench", model=ScriptedModel(steps), tools=[lookup])
    times: list[float] = []
    async with SQLiteSession("bench", db) as session:
        for i in range(runs):
            start = time.perf_counter()
            result = Runner.run_streamed(agent, f"question {i}", session=session)
            async for _ in result.stream_events():
                pass
            times.append(time.perf_counter() - start)
    return times


async def sdk(runs: int, db: Path) -> list[float]:
    scripted = agents.testing
    steps = []
    for i in range(runs):
        steps.append([scripted.function_call("sdk_lookup", {"key": str(i)}, call_id=f"c{i}")])
        steps.append([scripted.assistant_message(f"answer {i}", item_id=f"m{i}")])
    agent = agents.Agent(name="bench", model=scripted.ScriptedModel(steps), tools=[sdk_lookup])
    session = agents.SQLiteSession("bench", str(db))
    times: list[float] = []
    try:
        for i in range(runs):
            start = time.perf_counter()
            result = agents.Runner.run_streamed(agent, f"question {i}", session=session)
            async for _ in result.stream_events():
                pass
            times.append(time.perf_counter() - start)
    finally:
        session.close()
    return times


async def main(runs: int) -> None:
    agents.set_tracing_disabled(True)
    with tempfile.TemporaryDirectory() as folder:
        ours_times = await ours(runs, Path(folder) / "ours.db")
        sdk_times = await sdk(runs, Path(folder) / "sdk.db")
    ours_ms = statistics.median(ours_times) * 1000
    sdk_ms = statistics.median(sdk_times) * 1000
    print(f"streamed runs per side: {runs} (a tool call, its output and an answer each)")
    print(f"turnstore run_streamed + SQLiteSession: median {ours_ms:.2f} ms per run")
    print(f"openai-agents run_streamed + SQLiteSession: median {sdk_ms:.2f} ms per run")
    print(f"ratio ours / SDK: {ours_ms / sdk_ms:.2f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
