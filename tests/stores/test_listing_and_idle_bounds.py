"""Session stores at the bounds of listing, paging and idle deletion, on every backend."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from support.items import user
from turnstore.admin import open_session_store


def store_of(backend: Backend) -> Any:
    return open_session_store(backend.store_target, key_prefix=backend.key_prefix)


@pytest.mark.parametrize(("offset", "limit"), [(0, 2**64), (2**64, 1), (2**63 - 1, 2**63 - 1)])
async def test_huge_pages_are_not_storage_errors(backend: Backend, offset: int, limit: int) -> None:
    """A page larger than any store means "everything": like `get_items`, it is capped."""
    session = backend.session(f"{backend.key_prefix}-huge")
    await session.add_items([user("x")])
    async with store_of(backend) as store:
        listed = await store.list_sessions(offset=offset, limit=limit, prefix=backend.key_prefix)
    ids = [info.session_id for info in listed]
    assert ids == ([session.session_id] if offset == 0 else [])


@pytest.mark.parametrize(("offset", "limit"), [(-1, 10), (0, 0), (0, -5), (True, 10), (0, True)])
async def test_bad_pages_are_value_errors(backend: Backend, offset: Any, limit: Any) -> None:
    await backend.session().add_items([user("x")])
    async with store_of(backend) as store:
        with pytest.raises(ValueError, match=r"offset|limit"):
            await store.list_sessions(offset=offset, limit=limit)


@pytest.mark.parametrize("older_than", [math.inf, 1e300, timedelta.max, 10**30])
async def test_enormous_idle_age_deletes_nothing(backend: Backend, older_than: Any) -> None:
    session = backend.session()
    await session.add_items([user("keep me")])
    async with store_of(backend) as store:
        assert await store.delete_idle_sessions(older_than) == 0
    assert await session.get_items() == [user("keep me")]


@pytest.mark.parametrize("older_than", [-math.inf, -1, timedelta(seconds=-1), math.nan])
async def test_negative_or_nan_idle_age_is_a_value_error(backend: Backend, older_than: Any) -> None:
    session = backend.session()
    await session.add_items([user("x")])
    async with store_of(backend) as store:
        with pytest.raises(ValueError, match="older_than"):
            await store.delete_idle_sessions(older_than)
    assert await session.get_items() == [user("x")]


async def test_prefix_with_wildcards_is_literal_and_pages_are_disjoint(backend: Backend) -> None:
    base = backend.key_prefix
    ids = [f"{base}%_{n}" for n in range(7)] + [f"{base}x{n}" for n in range(3)]
    for sid in ids:
        await backend.session(sid).add_items([user(sid)])
    async with store_of(backend) as store:
        pages = [
            await store.list_sessions(prefix=f"{base}%_", offset=offset, limit=3)
            for offset in (0, 3, 6, 9)
        ]
        listed = [info.session_id for page in pages for info in page]
        assert sorted(listed) == sorted(ids[:7])
        assert len(listed) == len(set(listed))
        assert [len(page) for page in pages] == [3, 3, 1, 0]
        assert await store.list_sessions(prefix=f"{base}%") != []
        assert await store.list_sessions(prefix=f"{base}_") == []


async def test_sessions_sharing_a_storage_survive_an_idle_prune(backend: Backend) -> None:
    fresh = backend.session()
    await fresh.add_items([user("fresh")])
    async with store_of(backend) as store:
        await store.delete_idle_sessions(timedelta(days=1))
    assert await fresh.get_items() == [user("fresh")]
