"""Benchmark: what the extension sessions cost over the plain SQLiteSession, in one run.

Each workload runs on the plain `SQLiteSession`, on `EncryptedSession` over a `SQLiteSession`,
on `AdvancedSQLiteSession` on `main` and on a branch, and on the OpenAI Agents SDK's
`AdvancedSQLiteSession` when the SDK is installed (file databases in a fresh temporary
directory). Each ratio is session / plain: how many times longer it takes. Run it with
`make bench` (or `python bench/bench_extensions.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from bench_sqlite import item  # the same ~300-byte message as the SQLite benchmark
from turnstore import AdvancedSQLiteSession, EncryptedSession, SQLiteSession

KEY = Fernet.generate_key().decode()


def plain(session_id: str, path: Path) -> Any:
    return SQLiteSession(session_id, path)


def encrypted(session_id: str, path: Path) -> Any:
    return EncryptedSession(session_id, SQLiteSession(session_id, path), KEY, ttl=None)


def advanced(session_id: str, path: Path) -> Any:
    return AdvancedSQLiteSession(session_id=session_id, db_path=path)


async def on_branch(session: Any) -> None:
    """Move to a branch forked before the session's only turn (its writes are branch rows)."""
    await session.add_items([{"role": "user", "content": "first question"}])
    await session.create_branch_from_turn(1, "side")


def sdk_advanced(session_id: str, path: Path) -> Any:
    from agents.extensions.memory import AdvancedSQLiteSession as SdkAdvancedSQLiteSession

    return SdkAdvancedSQLiteSession(session_id=session_id, db_path=path, create_tables=True)


Factory = Callable[[str, Path], Any]
Prepare = Callable[[Any], Awaitable[None]] | None


async def timed(work: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await work()
    return time.perf_counter() - start


async def workloads(factory: Factory, prepare: Prepare, root: Path, n: int) -> dict[str, float]:
    session = factory("s", root / "db.sqlite")
    if prepare is not None:
        await prepare(session)
    results: dict[str, float] = {}

    async def sequential_adds() -> None:
        for i in range(n):
            await session.add_items([item(i)])

    async def batch_add() -> None:
        await session.add_items([item(i) for i in range(n)])

    results[f"{n} sequential add_items"] = await timed(sequential_adds)
    results[f"one add_items of {n}"] = await timed(batch_add)
    results[f"get_items() of {2 * n}"] = await timed(session.get_items)

    async def latest() -> None:
        for _ in range(200):
            await session.get_items(20)

    results["200 x get_items(20)"] = await timed(latest)
    closing = session.close()
    if inspect.isawaitable(closing):
        await closing
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=2000, help="items per workload")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best of each is kept")
    args = parser.parse_args()
    peers: list[tuple[str, Factory, Prepare]] = [
        ("plain", plain, None),
        ("encrypted", encrypted, None),
        ("advanced", advanced, None),
        ("adv-branch", advanced, on_branch),
    ]
    try:
        import agents.extensions.memory  # noqa: F401
    except ImportError:
        pass
    else:
        peers.append(("sdk-advanced", sdk_advanced, None))
    figures: dict[str, dict[str, float]] = {}
    for _name, factory, prepare in peers:  # warm up: threads, imports, caches
        with tempfile.TemporaryDirectory() as tmp:
            await workloads(factory, prepare, Path(tmp), 50)
    for _round in range(args.rounds):  # the best of a few rounds: the machine may be busy
        for name, factory, prepare in peers:
            with tempfile.TemporaryDirectory() as tmp:
                timings = await workloads(factory, prepare, Path(tmp), args.n)
            best = figures.setdefault(name, timings)
            for workload, seconds in timings.items():
                best[workload] = min(best[workload], seconds)
    others = [name for name, _, _ in peers[1:]]
    print("Seconds on plain SQLiteSession, and each session's ratio to it (session / plain)")
    print(f"{'workload':<28} {'plain s':>9}" + "".join(f" {name:>12}" for name in others))
    for workload, base in figures["plain"].items():
        ratios = "".join(f" {figures[name][workload] / base:>12.2f}" for name in others)
        print(f"{workload:<28} {base:>9.3f}{ratios}")


if __name__ == "__main__":
    asyncio.run(main())
