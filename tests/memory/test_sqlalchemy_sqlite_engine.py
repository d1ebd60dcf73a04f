"""SQLAlchemySession on a SQLite engine (`sqlite+aiosqlite`), the OpenAI Agents SDK's test setup.

SQLite has no `SELECT ... FOR UPDATE`, and its Python driver begins a transaction only at the
first write: two concurrent `pop_item` calls both read the newest row before either deletes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from turnstore.extensions.memory import SQLAlchemySession

pytest.importorskip("aiosqlite")


@pytest.fixture(params=["file", "memory"])
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    # An in-memory database is one connection that every session shares (a StaticPool).
    where = tmp_path / "pop.db" if request.param == "file" else ":memory:"
    engine = create_async_engine(f"sqlite+aiosqlite:///{where}")
    yield engine
    await engine.dispose()


async def test_concurrent_pops_return_each_row_once(engine: AsyncEngine) -> None:
    sessions = [SQLAlchemySession("popped", engine=engine, create_tables=True) for _ in range(4)]
    items = [{"role": "user", "content": str(n)} for n in range(12)]
    await sessions[0].add_items(items)  # type: ignore[arg-type]

    popped = await asyncio.gather(*(sessions[n % 4].pop_item() for n in range(16)))

    contents = [item["content"] for item in popped if item is not None]  # type: ignore[typeddict-item]
    assert sorted(contents, key=int) == [str(n) for n in range(12)]  # each row once
    assert popped.count(None) == 4
    assert await sessions[1].get_items() == []


async def test_pops_racing_appends_lose_and_repeat_nothing(engine: AsyncEngine) -> None:
    writer = SQLAlchemySession("mixed", engine=engine, create_tables=True)
    popper = SQLAlchemySession("mixed", engine=engine, create_tables=True)
    await writer.add_items([{"role": "user", "content": "seed"}])

    async def append(n: int) -> None:
        await writer.add_items([{"role": "user", "content": f"a{n}"}])

    results = await asyncio.gather(
        *(append(n) for n in range(10)), *(popper.pop_item() for _ in range(6))
    )
    popped = [item["content"] for item in results if item is not None]  # type: ignore[index]
    left = [item["content"] for item in await writer.get_items()]  # type: ignore[typeddict-item]
    assert len(popped) == len(set(popped))
    assert sorted(popped + left) == sorted(["seed", *(f"a{n}" for n in range(10))])
