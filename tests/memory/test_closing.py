"""`close()` works awaited and not, and no finalizer runs an event loop.

A `Closing` dropped before its release ran is finalized wherever the garbage collector runs (any
thread, maybe inside a running loop): it hands the release to the loop that owns the
connections while that loop runs, warns when it cannot, and never starts a loop of its own.
These tests watch the Redis server's client list, so they see real connections close. After
close(), from synchronous code, another thread or awaited, every call raises
SessionClosedError.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis.asyncio import Redis

from turnstore import SessionClosedError, SQLiteSession
from turnstore.extensions.memory import EncryptedSession, RedisSession, SQLAlchemySession

USER = {"role": "user", "content": "hi"}


def _msg(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class LoopCreations:
    """Counts the event loops created while installed (every asyncio loop runs this __init__)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.threads: list[str] = []
        self._monkeypatch = monkeypatch
        self._init: Callable[..., None] = asyncio.BaseEventLoop.__init__

    def __enter__(self) -> LoopCreations:
        init = self._init
        threads = self.threads

        def counting_init(loop: asyncio.BaseEventLoop, *args: Any, **kwargs: Any) -> None:
            threads.append(threading.current_thread().name)
            init(loop, *args, **kwargs)

        self._monkeypatch.setattr(asyncio.BaseEventLoop, "__init__", counting_init)
        return self

    def __exit__(self, *exc: object) -> None:
        self._monkeypatch.setattr(asyncio.BaseEventLoop, "__init__", self._init)


class OwnerLoop:
    """An event loop running on a thread of its own, as a server's loop would."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="owner-loop")
        self._thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()


@pytest.fixture
def owner() -> Iterator[OwnerLoop]:
    owner = OwnerLoop()
    try:
        yield owner
    finally:
        owner.stop()


@pytest.fixture
def client_name() -> str:
    return f"closing-{uuid.uuid4().hex}"


def connections_named(redis_url: str, name: str) -> int:
    """How many connections the Redis server has from clients called `name`."""

    async def count() -> int:
        admin = Redis.from_url(redis_url)
        try:
            clients = await admin.client_list()
        finally:
            await admin.aclose()
        return sum(1 for client in clients if client.get("name") == name)

    return asyncio.run(count())


def wait_for_no_connections(redis_url: str, name: str) -> int:
    for _ in range(100):
        if connections_named(redis_url, name) == 0:
            return 0
        threading.Event().wait(0.05)
    return connections_named(redis_url, name)


def used_session(redis_url: str, name: str, owner: OwnerLoop) -> RedisSession:
    session = RedisSession.from_url(
        f"s-{uuid.uuid4().hex}", redis_url, key_prefix=name, client_name=name
    )
    owner.run(session.add_items([USER]))
    owner.run(session.clear_session())
    return session


def test_a_dropped_close_goes_to_the_owning_loop_and_starts_no_loop(
    redis_url: str, client_name: str, owner: OwnerLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = used_session(redis_url, client_name, owner)
    assert connections_named(redis_url, client_name) == 1
    with LoopCreations(monkeypatch) as created, warnings.catch_warnings():
        warnings.simplefilter("error")
        session.close()  # no loop on this thread: the result is dropped unawaited
        gc.collect()
        owner.run(asyncio.sleep(0.1))  # let the owning loop run what it was handed
    assert created.threads == []
    assert wait_for_no_connections(redis_url, client_name) == 0


def test_a_close_collected_inside_another_running_loop_starts_no_loop(
    redis_url: str, client_name: str, owner: OwnerLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = used_session(redis_url, client_name, owner)
    closing = session.close()

    async def collect_here() -> None:
        nonlocal closing
        del closing
        gc.collect()  # the finalizer runs inside this loop, on this thread
        await asyncio.sleep(0)

    loop = asyncio.new_event_loop()
    try:
        with LoopCreations(monkeypatch) as created, warnings.catch_warnings():
            warnings.simplefilter("error")
            loop.run_until_complete(collect_here())
            owner.run(asyncio.sleep(0.1))
        assert created.threads == []
        assert not asyncio.all_tasks(loop)  # nothing was left on the wrong loop
    finally:
        loop.close()
    assert wait_for_no_connections(redis_url, client_name) == 0


def test_a_close_dropped_after_its_loop_ended_warns_and_starts_no_loop(
    redis_url: str, client_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = RedisSession.from_url(
        f"s-{uuid.uuid4().hex}", redis_url, key_prefix=client_name, client_name=client_name
    )
    asyncio.run(session.add_items([USER]))
    with LoopCreations(monkeypatch) as created, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.close()  # the loop that owns the connections is gone
        gc.collect()
        ours = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
        del session  # redis-py then warns about its connection of the dead loop too
        gc.collect()
    assert created.threads == []
    assert len(ours) == 1
    assert ours[0].startswith("RedisSession was closed by close() outside an event loop")
    assert "await close()" in ours[0]


@pytest.mark.filterwarnings("error")
def test_every_complete_close_releases_without_a_resource_warning(
    redis_url: str, client_name: str, owner: OwnerLoop, tmp_path: Any
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Awaited on the loop that used it.
        awaited = used_session(redis_url, client_name, owner)
        owner.run(awaited.close())
        assert connections_named(redis_url, client_name) == 0
        # Called inside that loop and not awaited: the loop finishes the release.
        plain = used_session(redis_url, client_name, owner)

        async def close_without_awaiting(session: RedisSession) -> None:
            session.close()
            await asyncio.sleep(0.1)

        owner.run(close_without_awaiting(plain))
        # Not used yet, closed from synchronous code: nothing was opened.
        RedisSession.from_url("unused", redis_url, client_name=client_name).close()
        # The SDK's way: SQLiteSession.close() from synchronous code.
        sqlite = SQLiteSession("s", str(tmp_path / "closing.db"))
        asyncio.run(sqlite.add_items([USER]))
        sqlite.close()
        # A wrapper's close is its wrapped session's.
        wrapped = EncryptedSession("s", used_session(redis_url, client_name, owner), "key")
        owner.run(wrapped.close())
        del awaited, plain, sqlite, wrapped
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert wait_for_no_connections(redis_url, client_name) == 0


# --- after close() every call is refused, however and wherever it was called ----------------------


def test_sqlite_close_from_sync_code_then_every_call_is_refused(tmp_path: Any) -> None:
    path = tmp_path / "c.db"
    session = SQLiteSession("s", path)
    asyncio.run(session.add_items([_msg("x")]))
    session.close()  # plain call, no loop running: closed (and its threads joined) now
    session.close()
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())
    with pytest.raises(SessionClosedError):
        asyncio.run(session.snapshot_history())
    reader = SQLiteSession("s", path)
    assert asyncio.run(reader.get_items()) == [_msg("x")]
    reader.close()


def test_sqlite_close_from_another_thread_while_in_use(tmp_path: Any) -> None:
    path = tmp_path / "t.db"
    session = SQLiteSession("s", path)

    async def use() -> None:
        await session.add_items([_msg("before")])
        closer = threading.Thread(target=session.close)
        closer.start()
        await asyncio.to_thread(closer.join)
        with pytest.raises(SessionClosedError):
            await session.add_items([_msg("after")])

    asyncio.run(use())
    reader = SQLiteSession("s", path)
    assert asyncio.run(reader.get_items()) == [_msg("before")]
    reader.close()


@pytest.mark.parametrize("which", ["postgres", "redis"])
def test_pooled_close_from_sync_code_before_any_use(
    request: pytest.FixtureRequest, which: str
) -> None:
    if which == "postgres":
        session: Any = SQLAlchemySession.from_url("x", request.getfixturevalue("postgres_url"))
    else:
        session = RedisSession.from_url("x", request.getfixturevalue("redis_url"))
    session.close()
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())


@pytest.mark.parametrize("which", ["postgres", "pgbouncer", "redis", "cluster"])
async def test_pooled_close_awaited_then_every_call_is_refused(
    request: pytest.FixtureRequest, which: str
) -> None:
    url = request.getfixturevalue(f"{which}_url" if which != "cluster" else "redis_cluster_url")
    sid = f"closing-{uuid.uuid4().hex}"
    if which in ("postgres", "pgbouncer"):
        session: Any = SQLAlchemySession.from_url(sid, url, create_tables=True)
    else:
        session = RedisSession.from_url(sid, url)
    await session.add_items([_msg("x")])
    await session.clear_session()
    await session.close()
    await session.close()
    for call in (
        session.get_items(),
        session.add_items([_msg("y")]),
        session.pop_item(),
        session.clear_session(),
        session.snapshot_history(),
    ):
        with pytest.raises(SessionClosedError):
            await call
