"""Benchmark: what the extension sessions cost over the plain SQLiteSession, in one run.

Each workload runs on the plain `SQLiteSession`, on `EncryptedSession` over a `SQLiteSession`,
on `AdvancedSQLiteSession` on `main` and on a branch, and on the OpenAI Agents SDK's
`AdvancedSQLiteSession` when the SDK is installed (file databases in a fresh temporary
directory). Each ratio is session / plain: how many times longer it takes. Run it with
`make bench` (or `python bench/bench_extensions.py`).

Then the cost of a long branch on `AdvancedSQLiteSession`, as ratios long / short (1.0: flat with
history size): `main`'s `get_items(20)` after a branch wrote `--branch-items` items against before
it did, and `pop_item` + `add_items` on a branch of that many items against a branch of 20.
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
from turnstore import SQLiteSession
from turnstore.extensions.memory import AdvancedSQLiteSession, EncryptedSession

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


async def repeat(work: Callable[[], Awaitable[Any]], times: int) -> float:
    """Seconds for `times` calls of `work`, after as many untimed ones (threads, caches)."""
    for _ in range(times):
        await work()
    start = time.perf_counter()
    for _ in range(times):
        await work()
    return time.perf_counter() - start


async def branch_costs(root: Path, branch_items: int, times: int) -> dict[str, tuple[float, float]]:
    """(short, long) seconds of the reads and writes that a long branch could slow down."""
    session = AdvancedSQLiteSession(session_id="b", db_path=root / "branches.sqlite")
    await session.add_items([{"role": "user", "content": "first question"}])
    await session.add_items([item(i) for i in range(40)])
    await session.create_branch_from_turn(1, "long")
    await session.switch_to_branch("main")
    main_before = await repeat(lambda: session.get_items(20), times)
    await session.switch_to_branch("long")
    await session.add_items([item(i) for i in range(20)])

    async def pop_and_add() -> None:
        popped = await session.pop_item()
        assert popped is not None
        await session.add_items([popped])

    pop_short = await repeat(pop_and_add, times)
    await session.add_items([item(i) for i in range(branch_items - 20)])
    pop_long = await repeat(pop_and_add, times)
    await session.switch_to_branch("main")
    main_after = await repeat(lambda: session.get_items(20), times)
    await session.close()
    return {
        f"main get_items(20), branch of {branch_items} / none": (main_before, main_after),
        f"pop_item + add_items, branch of {branch_items} / 20": (pop_short, pop_long),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=2000, help="items per workload")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best of each is kept")
    parser.add_argument("--branch-items", type=int, default=20_000, help="items of the long branch")
    parser.add_argument("--only-branches", action="store_true", help="only the branch ratios")
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
    costs: dict[str, tuple[float, float]] = {}
    for _round in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            for workload, (short, long) in (
                await branch_costs(Path(tmp), args.branch_items, 200)
            ).items():
                best_short, best_long = costs.get(workload, (short, long))
                costs[workload] = (min(best_short, short), min(best_long, long))
    if args.only_branches:
        print_branch_costs(costs)
        return
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
    print()
    print_branch_costs(costs)


def print_branch_costs(costs: dict[str, tuple[float, float]]) -> None:
    """Print the long-branch ratios (1.0: flat with history size)."""
    print("AdvancedSQLiteSession: 200 calls with a long branch / with a short one (1.0 = flat)")
    for workload, (short, long) in costs.items():
        print(f"{workload:<52} {short:>8.3f}s {long:>8.3f}s {long / short:>7.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
