"""Cancel latency: how long a cancelled caller waits, against the old shielded behaviour.

    .venv/bin/python bench/bench_cancel.py [SECONDS]

1. `Runner.run` cancelled while auto-compaction waits for `responses.compact` (the fake server
   answers after SECONDS, default 3). Ours: only the history replacement is shielded. Peer, in
   the same run: the whole `run_compaction` shielded, as the runner did before.
2. `SQLiteSession.add_items` cancelled while another process holds the database's write lock
   for SECONDS. Ours: the writer drops the cancelled write between busy slices. Peer: the same
   write awaited without that hook, as before (it waits for the lock).

Prints the time from `task.cancel()` to the task being done, and the ratio ours / peer.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from turnstore import Agent, OpenAIResponsesCompactionSession, RunConfig, Runner, SQLiteSession
from turnstore.memory import await_session_mutation
from turnstore.memory.sqlite.session import Insert
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer, text_response


class _ShieldedCompaction(OpenAIResponsesCompactionSession):
    """The peer: the whole compaction shielded from cancellation (the former runner)."""

    async def run_compaction(self, args: Any = None) -> Any:
        return await await_session_mutation(super().run_compaction(args))


async def _cancel_in_compaction(shielded: bool, delay: float, db: Path) -> float:
    seen = threading.Event()

    def slow_output(body: dict[str, Any]) -> list[dict[str, Any]]:
        seen.set()
        time.sleep(delay)
        return FakeCompactionAPI.default_output(body)

    with FakeOpenAIServer() as server:
        FakeCompactionAPI(output=slow_output).install(server)
        server.enqueue(text_response("answer"))
        async with server.async_client() as client, SQLiteSession("b", db) as store:
            kind = _ShieldedCompaction if shielded else OpenAIResponsesCompactionSession
            session = kind("b", store, client=client, should_trigger_compaction=lambda c: True)
            task = asyncio.create_task(
                Runner.run(
                    Agent(name="A"),
                    "hi",
                    session=session,
                    run_config=RunConfig(openai_client=client),
                )
            )
            await asyncio.to_thread(seen.wait, 30)
            start = time.perf_counter()
            task.cancel()
            await asyncio.wait({task})
            return time.perf_counter() - start


HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("ROLLBACK")
    """
)


async def _cancel_busy_add(hooked: bool, hold: float, db: Path) -> float:
    async with SQLiteSession("b", db) as session:
        await session.add_items([{"role": "user", "content": "ready"}])
        holder = await asyncio.to_thread(
            subprocess.Popen,
            [sys.executable, "-c", HOLDER, str(db), str(hold)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None
        await asyncio.to_thread(holder.stdout.readline)
        if hooked:
            task = asyncio.create_task(session.add_items([{"role": "user", "content": "x"}]))
        else:
            schema = session._schema
            job = session._enqueue(Insert(schema, "b", [("b", '{"x": 1}')]), write=True)
            task = asyncio.create_task(await_session_mutation(job.future))
        await asyncio.sleep(0.3)
        start = time.perf_counter()
        task.cancel()
        await asyncio.wait({task})
        elapsed = time.perf_counter() - start
        await asyncio.to_thread(holder.wait)
        holder.stdout.close()
        return elapsed


async def main(seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ours = await _cancel_in_compaction(False, seconds, root / "c1.db")
        peer = await _cancel_in_compaction(True, seconds, root / "c2.db")
        print(
            f"Runner.run cancelled in compaction ({seconds:.1f} s server): "
            f"ours {ours * 1000:.0f} ms, shielded peer {peer * 1000:.0f} ms, "
            f"ratio {ours / peer:.4f}"
        )
        ours = await _cancel_busy_add(True, seconds, root / "a1.db")
        peer = await _cancel_busy_add(False, seconds, root / "a2.db")
        print(
            f"add_items cancelled on a database locked {seconds:.1f} s: "
            f"ours {ours * 1000:.0f} ms, unhooked peer {peer * 1000:.0f} ms, "
            f"ratio {ours / peer:.4f}"
        )


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0))
