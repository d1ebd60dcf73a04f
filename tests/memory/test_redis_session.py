"""RedisSession on a real Redis: what is specific to this backend.

The shared behaviour is the conformance suite's job: `TestRedisConformance` runs it here.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from redis.asyncio import Redis

from support.backends import RedisStorage, delete_prefix, unique_prefix
from support.waiting import eventually
from turnstore import Session, SessionClosedError, SessionStorageError, UserError
from turnstore.extensions.memory import RedisSession
from turnstore.testing import SessionConformanceTests

pytestmark = pytest.mark.services


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
async def prefix(client: Redis) -> AsyncIterator[str]:
    prefix = unique_prefix()
    yield prefix
    await delete_prefix(client, prefix)


async def test_layout_created_at_and_index(client: Redis, prefix: str) -> None:
    session = RedisSession("s", redis_client=client, key_prefix=prefix)
    await session.add_items([{"role": "user", "content": "héllo 😀"}])
    raw = await client.lrange(f"{prefix}:items:s", 0, -1)
    stamp, _, body = raw[0].decode().partition("|")
    assert stamp.isdigit()
    assert body == '{"role":"user","content":"héllo 😀"}'
    # The item keeps the time it was added; the index, the server's time when the write ran.
    score = await client.zscore(f"{prefix}:index", "s")
    assert score is not None
    assert score >= int(stamp)
    await session.clear_session()
    assert await client.exists(f"{prefix}:items:s") == 0
    assert await client.zscore(f"{prefix}:index", "s") is None


async def gone(client: Redis, key: str) -> bool:
    """Whether Redis no longer holds `key`."""
    return not await client.exists(key)


async def test_ttl_is_refreshed_on_every_write(client: Redis, prefix: str) -> None:
    session = RedisSession("s", redis_client=client, key_prefix=prefix, ttl=timedelta(seconds=30))
    assert session.ttl == 30
    await session.add_items([{"n": 1}, {"n": 2}, {"n": 3}])
    key = f"{prefix}:items:s"
    assert 29_000 < await client.pttl(key) <= 30_000
    await client.pexpire(key, 5_000)
    await session.add_items([{"n": 4}])
    assert await client.pttl(key) > 29_000  # add_items restarted the clock
    await client.pexpire(key, 5_000)
    await session.get_items()
    assert await client.pttl(key) <= 5_000  # a read does not
    await session.pop_item()
    assert await client.pttl(key) > 29_000  # pop_item did


async def test_ttl_expires_the_session(client: Redis, prefix: str) -> None:
    session = RedisSession("s", redis_client=client, key_prefix=prefix, ttl=0.2)
    await session.add_items([{"n": 1}])
    # The ttl's expiry is what is tested: the wait is Redis removing the key, not a fixed time.
    await eventually(lambda: gone(client, f"{prefix}:items:s"), "Redis to expire the session")
    assert await session.get_items() == []


@pytest.mark.parametrize(
    "ttl",
    [float("inf"), float("nan"), 1e16, 2**63, timedelta(days=366_000), 0, -1, 1e-300],
    ids=["inf", "nan", "1e16", "2**63", "1000-years-and-more", "zero", "negative", "tiny"],
)
async def test_an_unusable_ttl_fails_in_the_constructor(
    client: Redis, prefix: str, ttl: object
) -> None:
    if ttl == 1e-300:  # below a millisecond: rounded up to 1 ms, accepted
        session = RedisSession("s", redis_client=client, key_prefix=prefix, ttl=1e-300)
        assert session.ttl == 0.001
        return
    with pytest.raises(ValueError, match="ttl must be more than 0 and at most"):
        RedisSession("s", redis_client=client, key_prefix=prefix, ttl=ttl)  # type: ignore[arg-type]


async def test_the_longest_ttl_stores_once(client: Redis, prefix: str) -> None:
    from turnstore.memory.redis.session import MAX_TTL_SECONDS

    session = RedisSession("s", redis_client=client, key_prefix=prefix, ttl=MAX_TTL_SECONDS)
    await session.add_items([{"role": "user", "content": "a"}])
    assert await client.llen(f"{prefix}:items:s") == 1
    assert await client.pttl(f"{prefix}:items:s") > 0


async def test_the_write_script_refuses_a_bad_ttl_before_it_writes(
    client: Redis, prefix: str
) -> None:
    # Whatever reaches the script (another client of the same keys, a future bug), an expiry
    # Redis would refuse fails before RPUSH, so no retry can duplicate items.
    from redis.exceptions import ResponseError

    session = RedisSession("s", redis_client=client, key_prefix=prefix)
    key = f"{prefix}:items:s"
    for bad in (2**63 - 1, -5, "soon", 1.5):
        with pytest.raises(ResponseError, match="invalid ttl"):
            await session._add(
                keys=[key, f"{prefix}:index"], args=["s", bad, 1, '1|{"role":"user"}']
            )
        assert await client.exists(key) == 0
        assert await client.zscore(f"{prefix}:index", "s") is None


async def test_without_ttl_keys_do_not_expire(client: Redis, prefix: str) -> None:
    session = RedisSession("s", redis_client=client, key_prefix=prefix)
    await session.add_items([{"n": 1}])
    assert await client.pttl(f"{prefix}:items:s") == -1


async def test_prefixes_isolate(client: Redis, prefix: str) -> None:
    a = RedisSession("s", redis_client=client, key_prefix=f"{prefix}:a")
    b = RedisSession("s", redis_client=client, key_prefix=f"{prefix}:b")
    await a.add_items([{"a": 1}])
    assert await b.get_items() == []
    await b.clear_session()
    assert await a.get_items() == [{"a": 1}]


async def test_get_items_with_limit_reads_only_the_tail(
    client: Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    session = RedisSession("s", redis_client=client, key_prefix=prefix)
    await client.rpush(f"{prefix}:items:s", "not json at all")
    await session.add_items([{"n": i} for i in range(1, 6)])
    with caplog.at_level(logging.WARNING, logger="turnstore"):
        assert await session.get_items(3) == [{"n": 3}, {"n": 4}, {"n": 5}]
    assert not caplog.records  # the corrupt head element was never read
    with caplog.at_level(logging.WARNING, logger="turnstore"):
        assert await session.get_items(10) == [{"n": i} for i in range(1, 6)]
    assert "corrupt" in caplog.text


async def test_a_client_with_decoded_responses_works(redis_url: str, prefix: str) -> None:
    client = Redis.from_url(redis_url, decode_responses=True)
    try:
        session = RedisSession("s", redis_client=client, key_prefix=prefix)
        await session.add_items([{"n": "ü"}])
        assert await session.get_items() == [{"n": "ü"}]
        assert await session.pop_item() == {"n": "ü"}
    finally:
        await client.delete(f"{prefix}:items:s", f"{prefix}:index")
        await client.aclose()


async def test_from_url_owns_its_client_and_close(redis_url: str, prefix: str) -> None:
    session = RedisSession.from_url("s", redis_url, key_prefix=prefix, max_connections=4)
    assert session.client.connection_pool.max_connections == 4
    async with session:
        await session.add_items([{"a": 1}])
        assert await session.get_items() == [{"a": 1}]
        await session.clear_session()
    for call in (
        session.get_items(),
        session.add_items([{"a": 1}]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(SessionClosedError):
            await call
    await session.aclose()


def test_bad_arguments(client: Redis) -> None:
    with pytest.raises(ValueError, match="not a Redis URL"):
        RedisSession.from_url("s", "postgresql://x")
    with pytest.raises(ValueError, match="ttl"):
        RedisSession("s", redis_client=client, ttl=0)
    with pytest.raises(TypeError, match="ttl"):
        RedisSession("s", redis_client=client, ttl="1h")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key_prefix"):
        RedisSession("s", redis_client=client, key_prefix="")
    with pytest.raises(UserError, match=r"redis\.asyncio\.Redis"):
        RedisSession("s", redis_client=object())  # type: ignore[arg-type]


async def test_wrong_key_type_is_a_storage_error(client: Redis, prefix: str) -> None:
    await client.set(f"{prefix}:items:s", "a string, not a list")
    session = RedisSession("s", redis_client=client, key_prefix=prefix)
    with pytest.raises(SessionStorageError, match="WRONGTYPE") as info:
        await session.add_items([{"a": 1}])
    assert info.value.__cause__ is not None
    # The transaction failed as a whole: the index was not touched either.
    assert await client.zscore(f"{prefix}:index", "s") is None


async def test_killed_connection_gives_a_clear_error_then_recovers(
    redis_url: str, client: Redis, prefix: str
) -> None:
    name = f"victim-{uuid.uuid4().hex[:8]}"
    session = RedisSession.from_url("s", redis_url, key_prefix=prefix, client_name=name)
    async with session:
        await session.add_items([{"n": 1}])
        await client.execute_command("CLIENT", "PAUSE", "10000", "WRITE")
        try:
            add = asyncio.create_task(session.add_items([{"n": 2}, {"n": 3}]))
            await asyncio.sleep(0.2)  # the transaction is now waiting inside Redis
            assert not add.done()
            victims = [c["id"] for c in await client.client_list() if c["name"] == name]
            assert victims
            for victim in victims:
                await client.client_kill_filter(_id=victim)
        finally:
            await client.execute_command("CLIENT", "UNPAUSE")
        with pytest.raises(SessionStorageError, match="ConnectionError") as info:
            await add
        assert info.value.__cause__ is not None
        assert await session.get_items() == [{"n": 1}]
        await session.add_items([{"n": 4}])
        assert await session.get_items() == [{"n": 1}, {"n": 4}]


async def test_unreachable_server_is_a_storage_error() -> None:
    async with RedisSession.from_url("s", "redis://127.0.0.1:1/0") as session:
        with pytest.raises(SessionStorageError) as info:
            await session.get_items()
        assert info.value.__cause__ is not None


async def test_from_url_passes_socket_timeout_to_the_client(redis_url: str) -> None:
    """redis.md: `from_url(..., socket_timeout=...)` bounds every call to Redis."""
    async with RedisSession.from_url("s", redis_url, socket_timeout=2.5) as session:
        assert session.client.connection_pool.connection_kwargs["socket_timeout"] == 2.5
    # from_url sets no socket_timeout of its own: the redis-py version's default applies.
    async with RedisSession.from_url("s", redis_url) as default:
        assert "socket_timeout" not in default.client.connection_pool.connection_kwargs


async def test_a_server_that_stops_answering_fails_after_socket_timeout() -> None:
    """backends.md's failure table: with `socket_timeout`, a Redis that accepts the connection
    and never answers gives a `SessionStorageError`."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # read nothing, answer nothing

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with RedisSession.from_url(
            "s", f"redis://127.0.0.1:{port}/0", socket_timeout=0.2
        ) as session:
            with pytest.raises(SessionStorageError) as info:
                await asyncio.wait_for(session.get_items(), 30)  # a guard, not the bound
            assert info.value.__cause__ is not None
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
    assert accepted  # the client did reach the silent server


class TestRedisConformance(RedisStorage, SessionConformanceTests):
    """The shared session contract on Redis."""

    async def make_session(self, session_id: str) -> Session:
        return self.redis_session(session_id)


def test_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import turnstore.memory

    for name in [m for m in sys.modules if m == "redis" or m.startswith("redis.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the extra were not installed
    monkeypatch.delitem(sys.modules, "turnstore.memory.redis.session")
    with pytest.raises(ImportError, match=r"pip install 'turnstore\[redis\]'"):
        turnstore.extensions.memory.RedisSession  # noqa: B018
    with pytest.raises(ImportError, match=r"pip install 'turnstore\[redis\]'"):
        from turnstore.extensions.memory import RedisSession as _  # noqa: F401


async def test_interop_with_the_agents_sdk_and_our_runner(client: Redis, prefix: str) -> None:
    from turnstore.testing.interop import (
        check_agents_sdk_runner_remembers,
        check_history_interchange,
        check_runner_remembers,
    )

    def factory(session_id: str) -> RedisSession:
        return RedisSession(session_id, redis_client=client, key_prefix=prefix)

    stored = await check_agents_sdk_runner_remembers(factory)
    assert [item.get("type") for item in stored].count("function_call") == 1
    await check_runner_remembers(factory)
    await check_history_interchange(factory)


async def test_store_lists_live_sessions_and_prunes_expired_ones(
    redis_url: str, client: Redis, prefix: str
) -> None:
    from turnstore.admin import open_session_store

    keep = RedisSession("keep", redis_client=client, key_prefix=prefix)
    # Long enough for the first listing to see it on a loaded machine; then it expires.
    brief = RedisSession("brief", redis_client=client, key_prefix=prefix, ttl=2)
    await keep.add_items([{"n": 1}, {"n": 2}])
    await brief.add_items([{"n": 1}])
    async with open_session_store(redis_url, key_prefix=prefix) as store:
        listed = {info.session_id: info.item_count for info in await store.list_sessions()}
        assert listed == {"keep": 2, "brief": 1}
        await eventually(lambda: gone(client, f"{prefix}:items:brief"), "Redis to expire 'brief'")
        infos = await store.list_sessions()
        assert [(i.session_id, i.item_count) for i in infos] == [("keep", 2)]
        assert infos[0].created_at is not None
        assert infos[0].last_activity is not None
        assert await client.zscore(f"{prefix}:index", "brief") is None  # pruned
        assert await store.get_info("brief") is None
        stats = await store.stats()
        assert (stats.backend, stats.sessions, stats.items) == ("redis", 1, 2)


async def test_ping_tells_whether_redis_answers(redis_url: str, prefix: str) -> None:
    # The OpenAI Agents SDK's RedisSession.ping: True when the server answers, False when it
    # cannot be reached, and a closed session raises (a RuntimeError) instead of reconnecting.
    session = RedisSession.from_url("ping", redis_url, key_prefix=prefix)
    assert await session.ping() is True
    await session.aclose()
    with pytest.raises(SessionClosedError):
        await session.ping()
    with pytest.raises(RuntimeError):
        await session.ping()

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = RedisSession.from_url("ping", f"redis://127.0.0.1:{port}/0", key_prefix=prefix)
    try:
        assert await unreachable.ping() is False
    finally:
        await unreachable.aclose()


async def test_ping_on_a_redis_cluster(redis_cluster_url: str) -> None:
    session = RedisSession.from_url("ping", redis_cluster_url, key_prefix=unique_prefix())
    try:
        assert await session.ping() is True
    finally:
        await session.aclose()
