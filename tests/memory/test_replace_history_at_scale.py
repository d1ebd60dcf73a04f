"""The atomic replacement at size, and on sessions sharing one storage."""

from __future__ import annotations

import asyncio
from typing import Any

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from support.items import user


async def test_thousands_of_rows_replaced_by_thousands_keep_their_order(
    backend: Backend,
) -> None:
    session = backend.session()
    old = [user(f"old {n}") for n in range(2500)]
    new = [user(f"new {n}") for n in range(2500)]
    await session.add_items(old)
    snapshot = (await session.snapshot_history()).prefix(2000)
    assert await session.replace_history(snapshot, new) is True
    assert await session.get_items() == [*new, *old[2000:]]
    assert await session.get_items(3) == old[-3:]


async def test_a_huge_item_replaces_and_reads_back(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([user("a"), user("b")])
    huge = {"role": "assistant", "content": "ü" * 3_000_000}
    assert await session.replace_history(await session.snapshot_history(), [huge]) is True
    assert await session.get_items() == [huge]
    assert await session.pop_item() == huge


async def test_sessions_sharing_a_storage_replace_concurrently_in_isolation(
    backend: Backend,
) -> None:
    sessions = [backend.session() for _ in range(8)]

    async def life(index: int, session: Any) -> None:
        await session.add_items([user(f"{index}-{n}") for n in range(20)])
        for round_ in range(3):
            snapshot = await session.snapshot_history()
            writer = asyncio.create_task(session.add_items([user(f"{index}-late-{round_}")]))
            assert await session.replace_history(
                snapshot.prefix(len(snapshot.items) - 1), [user(f"{index}-summary-{round_}")]
            )
            await writer

    await asyncio.gather(*(life(index, session) for index, session in enumerate(sessions)))
    for index, session in enumerate(sessions):
        items = await session.get_items()
        texts = [item["content"] for item in items]
        # Each round compacts all but the newest item of its snapshot; the item written
        # during the round lands after the snapshot and stays, so after three rounds:
        assert texts == [f"{index}-summary-2", f"{index}-late-1", f"{index}-late-2"], texts
