"""The public atomic replacement (`snapshot_history` / `replace_history`) on every backend.

Each test goes through the real backends (a SQLite file, PostgreSQL directly and through
PgBouncer, Redis and the Redis Cluster) and checks a documented promise of
`AtomicReplacementSession`: a stale snapshot is refused without change, a bad batch changes
nothing, later additions stay last, a cancelled replacement is all or nothing. The basic cases
(a popped or cleared snapshot, a prefix, one bad item) are the conformance suite's.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
from typing import Any

import pytest

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from support.items import user
from turnstore import SessionClosedError, UserError
from turnstore.admin import SessionRecord, open_session_store
from turnstore.memory import (
    AtomicReplacementSession,
    HistorySnapshot,
    is_atomic_replacement_session,
)

A, B, C, D = user("a"), user("b"), user("c"), user("d")
SUMMARY = {"type": "message", "role": "assistant", "content": "summary of a and b"}


async def test_every_backend_is_an_atomic_replacement_session(backend: Backend) -> None:
    session = backend.session()
    assert is_atomic_replacement_session(session)
    assert isinstance(session, AtomicReplacementSession)


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "pgbouncer"], indirect=True)
async def test_stale_snapshot_after_pop_and_readd_of_the_same_item_is_refused(
    backend: Backend,
) -> None:
    # The popped item comes back with identical content: still a different row. (On Redis the
    # outcome depends on whether the re-add lands in the same millisecond: the deterministic
    # form of that case is the re-import test below.)
    session = backend.session()
    await session.add_items([A, B])
    snapshot = await session.snapshot_history()
    popped = await session.pop_item()
    await session.add_items([popped])
    assert await session.replace_history(snapshot, [SUMMARY]) is False
    assert await session.get_items() == [A, B]


async def test_stale_snapshot_after_clear_and_rewrite_is_refused(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A, B])
    snapshot = await session.snapshot_history()
    await session.clear_session()
    await session.add_items([A, B, D])
    assert await session.replace_history(snapshot, [SUMMARY]) is False
    assert await session.get_items() == [A, B, D]


@pytest.mark.parametrize("backend", ["redis", "cluster", "sqlite", "postgres"], indirect=True)
async def test_stale_snapshot_after_pop_and_reimport_of_the_exported_record(
    backend: Backend, request: pytest.FixtureRequest
) -> None:
    """Pop the newest item, then import its exported record back (`turnstore import --append`).

    The re-imported row carries the same item and the same `created_at`: on Redis the list
    element is then byte-for-byte the snapshot's, and the stale snapshot is accepted.
    """
    if backend.name in ("redis", "cluster"):
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="RedisSession recognises a snapshot's rows by their bytes "
                "('<ms>|<json>'): a popped element written back with the same stamp and item "
                "(an import of its export, or a pop and re-add in the same millisecond) "
                "passes as the snapshot's own row, so replace_history returns True",
            )
        )
    session = backend.session()
    await session.add_items([A, B])
    async with open_session_store(backend.store_target, key_prefix=backend.key_prefix) as store:
        records = await store.read_records(session.session_id)
        snapshot = await session.snapshot_history()
        assert await session.pop_item() == B
        newest: SessionRecord = records[-1]
        await store.write_records(session.session_id, [newest])
    assert await session.get_items() == [A, B]
    assert await session.replace_history(snapshot, [SUMMARY]) is False
    assert await session.get_items() == [A, B]


async def test_later_additions_stay_after_the_new_items(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A, B])
    snapshot = await session.snapshot_history()
    await session.add_items([C])
    other = backend.session(session.session_id)  # another object on the same session
    await other.add_items([D])
    assert await session.replace_history(snapshot, [SUMMARY]) is True
    assert await session.get_items() == [SUMMARY, C, D]
    assert await session.pop_item() == D
    assert await session.get_items(1) == [C]


async def test_pop_of_a_row_outside_the_prefix_does_not_refuse_it(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A, B, C])
    snapshot = (await session.snapshot_history()).prefix(2)
    assert await session.pop_item() == C
    assert await session.replace_history(snapshot, [SUMMARY]) is True
    assert await session.get_items() == [SUMMARY]


@pytest.mark.parametrize(
    "bad",
    [
        [SUMMARY, {"x": math.nan}],
        [SUMMARY, "not a mapping"],
        [SUMMARY, {"text": "\ud800"}],
        [SUMMARY, {"x": object()}],
        "not a list",
    ],
    ids=["nan", "string-item", "lone-surrogate", "object", "not-a-list"],
)
async def test_bad_new_items_change_nothing(backend: Backend, bad: Any) -> None:
    session = backend.session()
    await session.add_items([A, B])
    snapshot = await session.snapshot_history()
    with pytest.raises(TypeError):
        await session.replace_history(snapshot, bad)
    assert await session.get_items() == [A, B]
    # The snapshot is still good: nothing was touched.
    assert await session.replace_history(snapshot, [SUMMARY]) is True
    assert await session.get_items() == [SUMMARY]


@pytest.mark.parametrize("not_a_snapshot", [None, [], (), {"items": []}, "snapshot"])
async def test_a_non_snapshot_is_a_type_error(backend: Backend, not_a_snapshot: Any) -> None:
    session = backend.session()
    await session.add_items([A])
    with pytest.raises(TypeError, match="HistorySnapshot"):
        await session.replace_history(not_a_snapshot, [SUMMARY])
    assert await session.get_items() == [A]


async def test_another_sessions_snapshot_is_refused(backend: Backend) -> None:
    first, second = backend.session(), backend.session()
    await first.add_items([A, B])
    await second.add_items([A, B])  # the same content in a session sharing the storage
    snapshot = await first.snapshot_history()
    assert await second.replace_history(snapshot, [SUMMARY]) is False
    assert await second.get_items() == [A, B]
    assert await first.get_items() == [A, B]


async def test_replace_on_a_closed_session_raises_and_changes_nothing(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A, B])
    snapshot = await session.snapshot_history()
    await session.aclose()
    with pytest.raises(SessionClosedError):
        await session.replace_history(snapshot, [SUMMARY])
    with pytest.raises(SessionClosedError):
        await session.snapshot_history()
    reader = backend.session(session.session_id)
    assert await reader.get_items() == [A, B]


async def test_close_inside_the_loop_then_replace(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A])
    snapshot = await session.snapshot_history()
    closing = session.close()  # a plain call on SQLite (closed when it returns), else a coroutine
    if inspect.isawaitable(closing):
        await closing
    with pytest.raises(SessionClosedError):
        await session.replace_history(snapshot, [SUMMARY])
    await session.aclose()  # twice, awaited: harmless
    reader = backend.session(session.session_id)
    assert await reader.get_items() == [A]


async def test_cancelled_replace_is_all_or_nothing(backend: Backend) -> None:
    session = backend.session()
    items = [user(f"item {n}") for n in range(200)]
    await session.add_items(items)
    for _ in range(5):
        snapshot = await session.snapshot_history()
        task = asyncio.create_task(session.replace_history(snapshot, [SUMMARY]))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        stored = await session.get_items()
        assert stored in (items, [SUMMARY]), stored[:3]
        if stored == [SUMMARY]:
            break
    # After the dust settles the session still works and the snapshot logic is sound.
    snapshot = await session.snapshot_history()
    assert await session.replace_history(snapshot, [A]) is True
    assert await session.get_items() == [A]


async def test_concurrent_compactors_only_one_wins(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A, B, C])
    snapshots = [await session.snapshot_history() for _ in range(6)]
    results = await asyncio.gather(
        *(session.replace_history(s, [user(f"winner {n}")]) for n, s in enumerate(snapshots))
    )
    assert results.count(True) == 1, results
    winner = results.index(True)
    assert await session.get_items() == [user(f"winner {winner}")]


async def test_writers_during_replacements_lose_nothing(backend: Backend) -> None:
    session = backend.session()
    writer = backend.session(session.session_id)
    await session.add_items([A])

    async def write() -> None:
        for n in range(30):
            await writer.add_items([user(f"w{n}")])

    async def compact() -> int:
        done = 0
        for _ in range(30):
            snapshot = await session.snapshot_history()
            if snapshot.items and await session.replace_history(
                snapshot.prefix(1), [snapshot.items[0]]
            ):
                done += 1
        return done

    _, replaced = await asyncio.gather(write(), compact())
    assert replaced >= 1
    stored = await session.get_items()
    assert stored == [A, *(user(f"w{n}") for n in range(30))]


async def test_empty_snapshot_puts_new_items_first(backend: Backend) -> None:
    session = backend.session()
    snapshot = await session.snapshot_history()
    assert snapshot == HistorySnapshot([])
    await session.add_items([A])
    assert await session.replace_history(snapshot, [SUMMARY]) is True
    assert await session.get_items() == [SUMMARY, A]


async def test_replace_with_nothing_leaves_an_empty_usable_session(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A, B])
    assert await session.replace_history(await session.snapshot_history(), []) is True
    assert await session.get_items() == []
    assert await session.pop_item() is None
    await session.add_items([C])
    assert await session.get_items() == [C]


@pytest.mark.parametrize("count", [0, -1, 4, True])
def test_snapshot_prefix_out_of_range(count: Any) -> None:
    snapshot = HistorySnapshot([A, B, C], rows=(1, 2, 3), item_rows=(0, 1, 2))
    with pytest.raises((ValueError, TypeError)):
        snapshot.prefix(count)


@pytest.mark.parametrize("backend", ["postgres", "redis", "cluster"], indirect=True)
async def test_pooled_session_on_another_loop_is_refused(backend: Backend) -> None:
    session = backend.session()
    await session.add_items([A])
    snapshot = await session.snapshot_history()

    def elsewhere() -> None:
        async def attempt() -> None:
            with pytest.raises(UserError, match="event loop"):
                await session.replace_history(snapshot, [SUMMARY])

        asyncio.run(attempt())

    await asyncio.to_thread(elsewhere)
    assert await session.get_items() == [A]


@pytest.mark.parametrize(
    "session_id",
    ["💬 ü/é", "a}b{c", "{x}", " ", "x" * 255, "tab\tnew\nline", "%_*?[]"],
    ids=["emoji", "braces", "hash-tag", "space", "255-chars", "control", "wildcards"],
)
async def test_odd_session_ids_replace_and_stay_isolated(backend: Backend, session_id: str) -> None:
    session = backend.session(session_id)
    neighbour = backend.session(f"{session_id}-neighbour"[-255:])
    await session.clear_session()
    await neighbour.add_items([D])
    await session.add_items([A, B])
    assert await session.replace_history(await session.snapshot_history(), [SUMMARY]) is True
    assert await session.get_items() == [SUMMARY]
    if neighbour.session_id != session.session_id:
        assert await neighbour.get_items() == [D]
