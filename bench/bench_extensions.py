"""Benchmark: what EncryptedSession costs over the plain SQLiteSession it wraps, in one run.

Each workload runs on the plain `SQLiteSession` and on `EncryptedSession` over a `SQLiteSession`
(file databases in a fresh temporary directory), and the ratio encrypted / plain is printed: how
many times longer the encrypted session takes. Run it with `make bench` (or
`python bench/bench_extensions.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from turnstore import EncryptedSession, SQLiteSession

KEY = Fernet.generate_key().decode()


def item(n: int) -> dict[str, Any]:
    """A realistic assistant message of about 300 bytes."""
    return {
        "type": "message",
        "id": f"msg_{n:08d}",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": f"Reply {n}: the Golden Gate Bridge is in San Francisco, California.",
                "annotations": [],
            }
        ],
    }


def plain(session_id: str, path: Path) -> Any:
    return SQLiteSession(session_id, path)


def encrypted(session_id: str, path: Path) -> Any:
    return EncryptedSession(session_id, SQLiteSession(session_id, path), KEY, ttl=None)


Factory = Callable[[str, Path], Any]


async def timed(work: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await work()
    return time.perf_counter() - start


async def workloads(factory: Factory, root: Path, n: int) -> dict[str, float]:
    session = factory("s", root / "db.sqlite")
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
    await session.close()
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=2000, help="items per workload")
    args = parser.parse_args()
    figures = {}
    for name, factory in (("plain", plain), ("encrypted", encrypted)):
        with tempfile.TemporaryDirectory() as tmp:
            figures[name] = await workloads(factory, Path(tmp), args.n)
    print("EncryptedSession over SQLiteSession vs SQLiteSession (ratio = encrypted / plain)")
    print(f"{'workload':<28} {'plain s':>9} {'encrypted s':>12} {'ratio':>7}")
    for workload, base in figures["plain"].items():
        cost = figures["encrypted"][workload]
        print(f"{workload:<28} {base:>9.3f} {cost:>12.3f} {cost / base:>7.2f}")


if __name__ == "__main__":
    asyncio.run(main())
