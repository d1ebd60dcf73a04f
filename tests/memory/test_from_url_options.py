"""`from_url` options: `engine_kwargs=` and `redis_kwargs=` reach the engine or client, and a
misplaced or doubled option is a `TypeError` from `from_url` itself, never at first use."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from support.items import user
from turnstore.extensions.memory import RedisSession, SQLAlchemySession


async def test_engine_kwargs_reach_the_engine(postgres_url: str) -> None:
    session = SQLAlchemySession.from_url(
        f"from-url-{uuid.uuid4().hex}",
        url=postgres_url,
        engine_kwargs={"pool_size": 2},
        max_overflow=0,
        create_tables=True,
    )
    try:
        assert session.engine.pool.size() == 2  # type: ignore[attr-defined]
        await session.add_items([user("x")])
        assert await session.get_items() == [user("x")]
        await session.clear_session()
    finally:
        await session.aclose()


@pytest.mark.parametrize(
    ("engine_kwargs", "kwargs", "error"),
    [
        ({"pool_size": 2}, {"pool_size": 3}, TypeError),
        (["pool_size", 2], {}, TypeError),
        ({"create_tables": True}, {}, TypeError),
    ],
    ids=["both-ways", "not-a-dict", "session-option-in-engine-kwargs"],
)
def test_bad_engine_kwargs_fail_in_from_url(
    postgres_url: str, engine_kwargs: Any, kwargs: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        SQLAlchemySession.from_url("x", postgres_url, engine_kwargs=engine_kwargs, **kwargs)


@pytest.mark.parametrize("which", ["redis", "cluster"])
async def test_redis_kwargs_reach_the_client(request: pytest.FixtureRequest, which: str) -> None:
    url = request.getfixturevalue("redis_url" if which == "redis" else "redis_cluster_url")
    session = RedisSession.from_url(
        f"from-url-{uuid.uuid4().hex}",
        url=url,
        redis_kwargs={"decode_responses": True},
        key_prefix=f"fromurl{uuid.uuid4().hex}",
    )
    try:
        await session.add_items([user("a"), user("b")])
        snapshot = await session.snapshot_history()
        assert all(isinstance(row, str) for row in snapshot.rows)  # the option took effect
        assert await session.replace_history(snapshot.prefix(1), [user("z")]) is True
        assert await session.get_items() == [user("z"), user("b")]
        assert await session.pop_item() == user("b")
        await session.clear_session()
    finally:
        await session.aclose()


@pytest.mark.parametrize("which", ["redis", "cluster"])
@pytest.mark.parametrize(
    ("redis_kwargs", "kwargs"),
    [({"ttl": 60}, {}), ({"key_prefix": "x"}, {}), ({}, {"no_such_option": 1})],
    ids=["ttl-in-redis-kwargs", "key-prefix-in-redis-kwargs", "unknown-keyword"],
)
async def test_bad_redis_kwargs_fail_in_from_url_not_at_first_use(
    request: pytest.FixtureRequest, which: str, redis_kwargs: Any, kwargs: Any
) -> None:
    """A misplaced option is refused by `from_url`, as SQLAlchemy's are, on one Redis too.

    Refused later, it would surface as a bare `TypeError` from inside redis-py at the first
    `add_items`, the error a bad item raises.
    """
    url = request.getfixturevalue("redis_url" if which == "redis" else "redis_cluster_url")
    with pytest.raises(TypeError):
        RedisSession.from_url("x", url, redis_kwargs=redis_kwargs, **kwargs)


async def test_redis_kwargs_given_both_ways_is_a_type_error(redis_url: str) -> None:
    with pytest.raises(TypeError, match="max_connections"):
        RedisSession.from_url(
            "x", redis_url, redis_kwargs={"max_connections": 2}, max_connections=3
        )
