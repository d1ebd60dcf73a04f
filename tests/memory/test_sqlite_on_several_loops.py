"""One SQLiteSession object used from several event loops at once.

SQLite sessions hold no pooled connections, so unlike the server backends they are not bound to
one loop: each call's future belongs to the loop that made the call.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from support.items import user
from turnstore import SQLiteSession


def test_one_sqlite_session_on_several_loops_at_once(tmp_path: Path) -> None:
    session = SQLiteSession("s", tmp_path / "loops.db")
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        async def run() -> None:
            for n in range(30):
                await session.add_items([user(f"{name}-{n}")])
                if n % 10 == 9:
                    snapshot = await session.snapshot_history()
                    await session.replace_history(snapshot.prefix(1), [snapshot.items[0]])

        try:
            asyncio.run(run())
        except BaseException as exc:  # reported below, with the thread's name
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a loop hung"
    assert errors == []
    items = asyncio.run(session.get_items())
    for name in ("t0", "t1", "t2"):
        mine = [item["content"] for item in items if item["content"].startswith(f"{name}-")]
        assert mine == [f"{name}-{n}" for n in range(30)]
    session.close()
