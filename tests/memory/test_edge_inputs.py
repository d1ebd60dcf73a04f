"""Inputs at the edges get the documented behaviour on every backend: a limit larger than any
session means everything, and text that cannot be stored as UTF-8 is a `TypeError` naming the
item, with nothing written."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from turnstore import Session, SQLiteSession

USER = {"role": "user", "content": "hi"}
ANSWER = {"role": "assistant", "content": "hello"}


@pytest.fixture(params=["sqlite-memory", "sqlite-file", "postgres", "redis"])
async def session(request: pytest.FixtureRequest, tmp_path: object) -> AsyncIterator[Session]:
    kind = request.param
    session_id = f"edge-{uuid.uuid4().hex}"
    made: Session
    cleanup: Callable[[], object] | None = None
    if kind == "sqlite-memory":
        made = SQLiteSession(session_id)
    elif kind == "sqlite-file":
        made = SQLiteSession(session_id, f"{tmp_path}/edge.db")
    elif kind == "postgres":
        url = request.getfixturevalue("postgres_url")
        from turnstore.extensions.memory import SQLAlchemySession

        suffix = uuid.uuid4().hex[:8]
        sql = SQLAlchemySession.from_url(
            session_id,
            url,
            create_tables=True,
            sessions_table=f"edge_s_{suffix}",
            messages_table=f"edge_m_{suffix}",
        )
        made = sql

        async def drop() -> None:
            from sqlalchemy import text

            async with sql.engine.begin() as conn:
                await conn.execute(text(f"DROP TABLE IF EXISTS edge_m_{suffix}"))
                await conn.execute(text(f"DROP TABLE IF EXISTS edge_s_{suffix}"))

        cleanup = drop
    else:
        url = request.getfixturevalue("redis_url")
        from turnstore.extensions.memory import RedisSession

        made = RedisSession.from_url(session_id, url, key_prefix=f"edge-{uuid.uuid4().hex[:8]}")
    try:
        yield made
    finally:
        await made.clear_session()
        if cleanup is not None:
            await cleanup()  # type: ignore[misc]
        await made.aclose()  # type: ignore[attr-defined]


async def test_a_limit_beyond_64_bits_returns_everything(session: Session) -> None:
    await session.add_items([USER, ANSWER])
    assert await session.get_items(2**70) == [USER, ANSWER]
    assert await session.get_items(2**63 - 1) == [USER, ANSWER]


async def test_a_lone_surrogate_is_a_type_error_naming_the_item(session: Session) -> None:
    await session.add_items([USER])
    with pytest.raises(TypeError, match="item 1 "):
        await session.add_items([ANSWER, {"role": "user", "content": "bad \ud800"}])
    assert await session.get_items() == [USER]


async def test_an_id_that_cannot_be_stored_fails_in_the_constructor(
    postgres_url: str, redis_url: str
) -> None:
    from turnstore.extensions.memory import RedisSession, SQLAlchemySession

    surrogate = "bad\ud800id"
    with pytest.raises(ValueError, match="not valid UTF-8"):
        SQLiteSession(surrogate)
    with pytest.raises(ValueError, match="not valid UTF-8"):
        RedisSession.from_url(surrogate, redis_url)
    with pytest.raises(ValueError, match="not valid UTF-8"):
        SQLAlchemySession.from_url(surrogate, postgres_url)
    with pytest.raises(ValueError, match="NUL"):
        SQLAlchemySession.from_url("bad\x00id", postgres_url)
    # SQLite and Redis store a NUL in an id like any other character.
    for session in (SQLiteSession("nul\x00id"), RedisSession.from_url("nul\x00id", redis_url)):
        await session.add_items([USER])
        assert await session.get_items() == [USER]
        await session.clear_session()
        await session.aclose()


async def test_nesting_is_bounded_by_a_fixed_depth_not_the_callers_stack(session: Session) -> None:
    from turnstore.memory.codec import MAX_ITEM_DEPTH
    from turnstore.testing.sample_items import deeply_nested

    deepest = deeply_nested(MAX_ITEM_DEPTH - 1)  # the item itself is level 1
    wide = {"role": "user", "content": "wide", "rows": [[] for _ in range(50_000)]}
    await session.add_items([USER, deepest, wide])
    with pytest.raises(TypeError, match=rf"item 1 .*more than {MAX_ITEM_DEPTH} levels"):
        await session.add_items([ANSWER, deeply_nested(MAX_ITEM_DEPTH)])
    assert await session.get_items() == [USER, deepest, wide]
