"""RedisSession: fast, optionally expiring history in Redis through redis-py's asyncio client.

Needs the `redis` extra: `pip install 'turnstore[redis]'`.

Works on a single Redis server (`redis.asyncio.Redis`) and on a Redis Cluster
(`redis.asyncio.cluster.RedisCluster`, or a `redis+cluster://` URL). The key layouts and the
element format are in `keys.py`: for a key prefix `P`, a session's items are one list,
`P:items:<session_id>` (`P:items:{<session_id>}` on a cluster), whose elements are
`<milliseconds since the epoch>|<item JSON>`, so each item records when it was added; a sorted
set scored by each session's last write (`P:index`, or one per hash slot on a cluster) lets
[`open_session_store`][turnstore.admin.open_session_store] and the `turnstore` CLI list sessions. An
id whose list has expired is dropped from it when sessions are listed. The Lua scripts are in
`scripts.py`, the URL schemes in `urls.py`; what it shares with `SQLAlchemySession` (ownership
of the client, the event loop binding, the open check) in `memory/pooled.py`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException, RedisError

from ...exceptions import SessionStorageError, UserError
from ..pooled import PooledSession
from ..session import HistorySnapshot
from ..settings import SessionSettingsLike, merge_kwargs
from . import scripts
from .keys import (
    DEFAULT_KEY_PREFIX,
    KeyLayout,
    decode_element,
    decode_elements,
    encode_element,
    layout_for,
)
from .scripts import MAX_TTL_SECONDS
from .urls import CLUSTER_SCHEMES, SCHEMES, check_database

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = [
    "CLIENT_ERRORS",
    "DEFAULT_KEY_PREFIX",
    "MAX_TTL_SECONDS",
    "RedisSession",
    "create_client_for_url",
    "decode_element",
    "ready",
]

_log = logging.getLogger(__name__)

CLIENT_ERRORS = (RedisError, RedisClusterException)
"""What the client raises when Redis fails (a cluster that cannot be reached raises the second)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _ttl_ms(ttl: float | timedelta | None) -> int:
    if ttl is None:
        return 0
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"ttl must be seconds (int or float), a timedelta or None, not {ttl!r}")
    if not (0 < seconds <= MAX_TTL_SECONDS):  # also refuses NaN and infinity
        raise ValueError(
            f"ttl must be more than 0 and at most {MAX_TTL_SECONDS} seconds (1,000 years); "
            f"pass None for a session that never expires. Got {ttl!r}"
        )
    return max(1, round(seconds * 1000))


class RedisSession(PooledSession):
    """A session stored in Redis, shared by every process that uses the same server and prefix.

    Each session is one Redis list: `get_items(limit)` reads only the latest items, and appends
    never rewrite the history. `add_items` and `pop_item` are atomic. A batch is stored whole
    or not at all, and never interleaved with another writer's batch. Two concurrent pops never
    return the same item. With a `ttl`, a session expires after that long without a write, and
    every write (`add_items`, `pop_item`) restarts the clock.

    Errors of the client are raised as [`SessionStorageError`][turnstore.SessionStorageError],
    with the original exception chained. The client reconnects on the next call. A client made
    by [`from_url`][turnstore.extensions.memory.RedisSession.from_url] does not retry commands
    by itself, since a retried write could be applied twice. (A cluster client still follows
    the `MOVED` and `ASK` redirects, which are safe.) A client you pass in keeps its own retry
    policy.

    On a Redis Cluster, every write is still atomic, the replacement by a compaction included.
    Sessions spread over the slots of every primary. A cluster lays out its keys differently
    and cannot read data written on a single Redis server: move that data with
    `turnstore export` and `turnstore import`.

    !!! warning "One event loop per session"
        The session belongs to the event loop it is first used on; another loop raises
        [`UserError`][turnstore.UserError]. Each `Runner.run_sync()` or `asyncio.run()` call
        starts a new loop, so create the session inside the loop that uses it.

    Args:
        session_id: Identifies the conversation.
        redis_client: A `redis.asyncio.Redis` client, or a `redis.asyncio.cluster.RedisCluster`
            for a Redis Cluster. The caller keeps ownership: `close()` does not close it.
        key_prefix: Prefix of every key this session uses, so that several applications (or
            tests) can share one database. On a cluster it must not contain `{` or `}`.
        ttl: Expire the session after this many seconds (or this `timedelta`) without a write;
            `None` keeps it until it is cleared.
        session_settings: Default settings for runs that use this session (or a dict of them).

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: `key_prefix` is empty (or holds braces on a cluster), `ttl` is not
            positive or is over 1,000 years, or `session_id` holds a lone surrogate (it
            cannot be stored as UTF-8).

    Example:
        ```python
        from turnstore import Runner
        from turnstore.extensions.memory import RedisSession

        async with RedisSession.from_url(
            "user-123", "redis://localhost:6379/0", ttl=3600
        ) as session:
            await Runner.run(agent, "Hello", session=session)
        ```
    """

    _storage_errors = CLIENT_ERRORS

    def __init__(
        self,
        session_id: str,
        *,
        redis_client: Redis | RedisCluster,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: float | timedelta | None = None,
        session_settings: SessionSettingsLike | None = None,
    ) -> None:
        super().__init__(session_id, session_settings)
        if not isinstance(redis_client, (Redis, RedisCluster)):
            raise UserError(
                "redis_client must be a redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster "
                f"client, not {type(redis_client).__name__}"
            )
        layout: KeyLayout = layout_for(redis_client, key_prefix)  # checks the prefix
        self._redis = redis_client
        self._prefix = key_prefix
        self._ttl_ms = _ttl_ms(ttl)
        self._items_key = layout.items_key(session_id)
        self._index_key = layout.index_key(session_id)
        self._pop = self._redis.register_script(scripts.POP)
        self._add = self._redis.register_script(scripts.ADD)
        self._clear_script = self._redis.register_script(scripts.CLEAR)
        self._replace_script = self._redis.register_script(scripts.REPLACE)

    @classmethod
    def from_url(
        cls,
        session_id: str,
        url: str,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: float | timedelta | None = None,
        session_settings: SessionSettingsLike | None = None,
        redis_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> RedisSession:
        """Create a session with its own client; `close()` closes that client.

        The session belongs to the event loop it is first used on; another loop raises
        [`UserError`][turnstore.UserError].

        Args:
            session_id: Identifies the conversation.
            url: `redis://host:port/db` (with `user:password@` before the host if needed),
                `rediss://...` (TLS), `unix:///path/to/socket`, or for a Redis Cluster
                `redis+cluster://host:port` (`rediss+cluster://` with TLS), naming any node:
                the client discovers the others.
            key_prefix: Prefix of every key this session uses.
            ttl: Expire the session after this long without a write; `None` never expires it.
            session_settings: Default settings for runs that use this session.
            redis_kwargs: Keyword arguments for the client as one dict (the OpenAI Agents SDK's
                form); merged with `**kwargs`.
            **kwargs: Passed to `redis.asyncio.Redis.from_url` (or
                `redis.asyncio.cluster.RedisCluster.from_url`) as they are (`max_connections`,
                `socket_timeout`, `retry`, ...).

        Returns:
            A session that owns its client.

        Raises:
            ValueError: The URL is not a Redis URL, or its database is not a number.
            TypeError: `redis_kwargs` is not a dict, repeats a keyword given directly, or holds
                an option the client does not take.
        """
        # An invalid argument raises before any connection exists: nothing to close then.
        return cls._owning(
            session_id=session_id,
            redis_client=create_client_for_url(url, **merge_kwargs(redis_kwargs, kwargs)),
            key_prefix=key_prefix,
            ttl=ttl,
            session_settings=session_settings,
        )

    @property
    def client(self) -> Redis | RedisCluster:
        """The Redis (or Redis Cluster) client this session uses."""
        return self._redis

    @property
    def ttl(self) -> float | None:
        """The time-to-live in seconds, or `None` when the session does not expire."""
        return self._ttl_ms / 1000 if self._ttl_ms else None

    async def ping(self) -> bool:
        """Tell whether Redis answers, as the OpenAI Agents SDK's `RedisSession.ping` does.

        Returns:
            `True` when the server answered `PING`, `False` when it could not be reached or
            answered with an error (the reason is logged at debug level). A connectivity probe
            only: the other methods raise `SessionStorageError` when Redis fails.

        Raises:
            SessionClosedError: The session was closed (also a `RuntimeError`, as in the
                SDK); a closed session never opens a connection again.

        Example:
            ```python
            session = RedisSession.from_url("user-42", url="redis://localhost:6379/0")
            if not await session.ping():
                raise SystemExit("Redis is not reachable")
            ```
        """
        self._check_open()
        try:
            await ready(self._redis)
            return bool(await self._redis.ping())
        except Exception as exc:  # the SDK's contract: any failure reads as "not reachable"
            _log.debug("ping of RedisSession %r failed: %r", self.session_id, exc)
            return False

    def __repr__(self) -> str:
        return f"RedisSession({self.session_id!r}, key={self._items_key!r})"

    # -- the storage steps (PooledSession) -----------------------------------------------------

    async def _prepare(self) -> None:
        await ready(self._redis)

    async def _release_client(self) -> None:
        await self._redis.aclose()

    def _storage_error(self, operation: str, exc: BaseException) -> SessionStorageError:
        return SessionStorageError(
            f"{operation} on session {self.session_id!r} failed: {type(exc).__name__}: {exc}"
        )

    def _keys_and_args(self) -> tuple[list[str], list[Any]]:
        return [self._items_key, self._index_key], [self.session_id, self._ttl_ms]

    async def _read(self, count: int | None) -> list[TResponseInputItem]:
        where = f"session {self.session_id!r}"
        raw: list[bytes | str] = await self._redis.lrange(
            self._items_key, 0 if count is None else -count, -1
        )
        valid = decode_elements(raw, where)
        if count is None or len(valid) == len(raw) or len(raw) < count:
            return valid
        # Corrupt elements in the tail: read the whole list once and take the valid tail.
        raw = await self._redis.lrange(self._items_key, 0, -1)
        return decode_elements(raw, where)[-count:]

    async def _append(self, encoded: list[str]) -> None:
        stamp = _now_ms()  # when each item was added; the script records the write's own time
        keys, args = self._keys_and_args()
        await self._add(keys=keys, args=[*args, *(encode_element(stamp, text) for text in encoded)])

    async def _pop_newest(self) -> TResponseInputItem | None:
        keys, args = self._keys_and_args()
        marker = f"turnstore-pop-{uuid.uuid4().hex}"
        raw = await self._pop(keys=keys, args=[*args, marker])
        if raw is None:
            return None
        _, item = decode_element(raw, where=f"the newest element of session {self.session_id!r}")
        return item

    async def _clear(self) -> None:
        await self._clear_script(keys=[self._items_key, self._index_key], args=[self.session_id])

    async def _snapshot(self) -> HistorySnapshot:
        raw: list[bytes | str] = await self._redis.lrange(self._items_key, 0, -1)
        where = f"session {self.session_id!r}"
        return HistorySnapshot.of_rows(
            [
                (element, decode_element(element, where=f"element {index} of {where}")[1])
                for index, element in enumerate(raw)
            ]
        )

    async def _replace(self, snapshot: HistorySnapshot, encoded: list[str]) -> bool:
        stamp = _now_ms()
        keys, args = self._keys_and_args()
        new = [encode_element(stamp, text) for text in reversed(encoded)]
        replaced = await self._replace_script(
            keys=keys,
            args=[*args, len(snapshot.rows), *cast(tuple[bytes | str, ...], snapshot.rows), *new],
        )
        return bool(replaced)


async def ready(client: Redis | RedisCluster) -> None:
    """Let a cluster client learn the cluster's slots before it sends a command.

    redis-py's cluster client does this inside the first command (and again after a connection
    error); several first commands at once then close connections under each other (seen with
    redis-py 8.1: "Connection closed by server" mid-command, and a client with retries applied
    such a write twice). `initialize()` runs under the client's lock and returns at once when
    the client is ready.

    Args:
        client: The client; a single-node client needs nothing.
    """
    if isinstance(client, RedisCluster):
        await client.initialize()


def create_client_for_url(url: str, **redis_kwargs: Any) -> Redis | RedisCluster:
    """Create a Redis or Redis Cluster client for a URL, without retries unless asked.

    Args:
        url: A `redis://`, `rediss://` or `unix://` URL, or `redis+cluster://` /
            `rediss+cluster://` for a Redis Cluster.
        **redis_kwargs: Passed to `Redis.from_url` (`RedisCluster.from_url` for a cluster).

    Returns:
        The client (no connection is opened yet).

    Raises:
        ValueError: The URL is not a Redis URL.
        TypeError: An option is not one the client (or its connections) takes.
    """
    if not isinstance(url, str) or not url.startswith(SCHEMES):
        raise ValueError(
            f"not a Redis URL: {url!r}; expected redis://host:port/db, rediss://..., unix://... "
            "or redis+cluster://host:port"
        )
    check_database(url)
    redis_kwargs.setdefault("retry", Retry(NoBackoff(), 0))
    try:
        if url.startswith(CLUSTER_SCHEMES):
            scheme, rest = url.split("://", 1)
            return RedisCluster.from_url(
                f"{scheme.removesuffix('+cluster')}://{rest}", **redis_kwargs
            )
        client = Redis.from_url(url, **redis_kwargs)
    except (ValueError, *CLIENT_ERRORS) as exc:
        raise ValueError(f"not a usable Redis URL: {url!r} ({exc})") from exc
    # The pool makes its connections on first use: build one now (no socket is opened) so that
    # an option no connection takes fails here, as it does for a cluster, not in the first call.
    pool = client.connection_pool
    try:
        pool.connection_class(**pool.connection_kwargs)
    except TypeError as exc:
        raise TypeError(f"an option of the Redis client is not valid: {exc}") from exc
    return client
