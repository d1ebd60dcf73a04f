"""RedisSession: fast, optionally expiring history in Redis through redis-py's asyncio client.

Needs the `redis` extra: `pip install 'turnstore[redis]'`.

Layout, for a key prefix `P` (default `agent_sessions`):

- `P:items:<session_id>`: a list, one element per item, oldest first. An element is
  `<milliseconds since the epoch>|<item JSON>`, so each item records when it was added.
- `P:index`: a sorted set of session ids scored by their last write (milliseconds), which
  [`open_session_store`][turnstore.open_session_store] and the `turnstore` CLI use to
  list sessions. An id whose list has expired is dropped from it when sessions are listed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

try:
    from redis.asyncio import Redis
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("RedisSession needs redis-py: pip install 'turnstore[redis]'") from exc

from ...exceptions import SessionClosedError, SessionStorageError, UserError
from ...items import TResponseInputItem
from ..closing import AsyncCloseable
from ..codec import check_limit, check_session_id, decode_item, encode_items
from ..loop_binding import LoopBinding
from ..mutation import await_session_mutation
from ..session import SessionABC
from ..settings import (
    SessionSettings,
    SessionSettingsLike,
    coerce_session_settings,
    resolve_session_limit,
)

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "RedisSession",
    "create_client_for_url",
    "decode_element",
    "index_key",
    "items_key",
]

_T = TypeVar("_T")

DEFAULT_KEY_PREFIX = "agent_sessions"
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")

# The scripts check key types first, so that no command can fail after a write: each script is
# all or nothing. KEYS[1] is the item list, KEYS[2] the index; ARGV[1] the session id, ARGV[2]
# the TTL in milliseconds (0: none), ARGV[3] the time in milliseconds.
_CHECK_TYPES = """
local list_type = redis.call('TYPE', KEYS[1]).ok
if list_type ~= 'none' and list_type ~= 'list' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. list_type .. ', not a list')
end
local index_type = redis.call('TYPE', KEYS[2]).ok
if index_type ~= 'none' and index_type ~= 'zset' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' holds a ' .. index_type .. ', not a zset')
end
"""

# Append ARGV[4..] (in chunks: Lua's unpack has a limit), refresh the TTL, record the write.
_ADD_SCRIPT = (
    _CHECK_TYPES
    + """
local last = #ARGV
local first = 4
while first <= last do
  local chunk_end = math.min(first + 999, last)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, first, chunk_end))
  first = chunk_end + 1
end
if tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return last - 3
"""
)

# Pop the newest element, refresh the TTL and record the write; an emptied session leaves the
# index.
_POP_SCRIPT = (
    _CHECK_TYPES
    + """
local element = redis.call('RPOP', KEYS[1])
if not element then
  return false
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if tonumber(ARGV[2]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return element
"""
)


def items_key(prefix: str, session_id: str) -> str:
    """Return the key of a session's item list.

    Args:
        prefix: The key prefix.
        session_id: The session id.

    Returns:
        `<prefix>:items:<session_id>`.
    """
    return f"{prefix}:items:{session_id}"


def index_key(prefix: str) -> str:
    """Return the key of the sorted set that indexes the sessions under a prefix.

    Args:
        prefix: The key prefix.

    Returns:
        `<prefix>:index`.
    """
    return f"{prefix}:index"


def decode_element(raw: bytes | str, *, where: str) -> tuple[int | None, TResponseInputItem | None]:
    """Split a stored list element into its timestamp and item.

    Args:
        raw: The element as stored.
        where: Names the element in the warning logged when it is corrupt.

    Returns:
        `(milliseconds, item)`; the item is `None` (with a logged warning) when corrupt.
    """
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    stamp, bar, body = text.partition("|")
    if not bar or not stamp.isdigit():
        return None, decode_item(text, where=where)  # logs the problem
    return int(stamp), decode_item(body, where=where)


_raw_decode = json.JSONDecoder().raw_decode


def _decode_items(raw: list[bytes | str], where: str) -> list[TResponseInputItem]:
    """Decode elements to items, skipping corrupt ones (the hot path of `get_items`)."""
    items: list[TResponseInputItem] = []
    for element in raw:
        try:
            text = element.decode() if isinstance(element, bytes) else element
            bar = text.find("|", 0, 24)
            # Parse the JSON in place, after the timestamp, without copying the body.
            value, end = _raw_decode(text, bar + 1)
            if bar > 0 and end == len(text) and type(value) is dict:
                items.append(value)  # type: ignore[arg-type]
                continue
        except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            pass
        decode_element(element, where=where)  # logs why it is corrupt
    return items


def _ttl_ms(ttl: float | timedelta | None) -> int:
    if ttl is None:
        return 0
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"ttl must be seconds (int or float), a timedelta or None, not {ttl!r}")
    if seconds <= 0:
        raise ValueError(f"ttl must be positive, got {ttl!r}")
    return max(1, round(seconds * 1000))


class RedisSession(SessionABC, AsyncCloseable):
    """A session stored in Redis, shared by every process that uses the same server and prefix.

    Each session is one Redis list, so `get_items(limit)` reads only the tail (`LRANGE -limit -1`)
    and appends never rewrite the history. `add_items` and `pop_item` are each one Lua script,
    which Redis runs atomically: a batch is stored whole or not at all and never interleaved
    with another writer's batch, and two concurrent pops never return the same item. With a
    `ttl`, a session expires after that long without a write; every write (`add_items`,
    `pop_item`) restarts the clock.

    Errors of the client are raised as [`SessionStorageError`][turnstore.SessionStorageError]
    with the original exception chained; the client reconnects on the next call. A client made by
    [`from_url`][turnstore.RedisSession.from_url] does not retry commands by itself (a retried
    write could be applied twice); a client you pass in keeps its own retry policy.

    Args:
        session_id: Identifies the conversation.
        redis_client: A `redis.asyncio.Redis` client. The caller keeps ownership: `close()` does
            not close it.
        key_prefix: Prefix of every key this session uses, so that several applications (or
            tests) can share one database.
        ttl: Expire the session after this many seconds (or this `timedelta`) without a write;
            `None` keeps it until it is cleared.
        session_settings: Default settings for runs that use this session (or a dict of them).

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: `key_prefix` is empty, `ttl` is not positive, or `session_id` holds a lone
            surrogate (it cannot be stored as UTF-8).

    Example:
        ```python
        from turnstore import RedisSession, Runner

        async with RedisSession.from_url(
            "user-123", "redis://localhost:6379/0", ttl=3600
        ) as session:
            await Runner.run(agent, "Hello", session=session)
        ```
    """

    def __init__(
        self,
        session_id: str,
        *,
        redis_client: Redis,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: float | timedelta | None = None,
        session_settings: SessionSettingsLike | None = None,
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        check_session_id(session_id)
        if not isinstance(key_prefix, str) or not key_prefix:
            raise ValueError(f"key_prefix must be a non-empty string, got {key_prefix!r}")
        if not isinstance(redis_client, Redis):
            raise UserError(
                "redis_client must be a redis.asyncio.Redis client, "
                f"not {type(redis_client).__name__}"
            )
        self.session_id = session_id
        self.session_settings: SessionSettings | None = coerce_session_settings(session_settings)
        self._redis = redis_client
        self._owns_client = False
        self._prefix = key_prefix
        self._ttl_ms = _ttl_ms(ttl)
        self._items_key = items_key(key_prefix, session_id)
        self._index_key = index_key(key_prefix)
        self._pop = self._redis.register_script(_POP_SCRIPT)
        self._add = self._redis.register_script(_ADD_SCRIPT)
        self._closed = False
        self._loop_binding = LoopBinding(f"RedisSession {session_id!r}")

    @classmethod
    def from_url(
        cls,
        session_id: str,
        url: str,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: float | timedelta | None = None,
        session_settings: SessionSettingsLike | None = None,
        **redis_kwargs: Any,
    ) -> RedisSession:
        """Create a session with its own client; `close()` closes that client.

        Args:
            session_id: Identifies the conversation.
            url: `redis://[user:password@]host:port/db`, `rediss://...` (TLS) or
                `unix:///path/to/socket`.
            key_prefix: Prefix of every key this session uses.
            ttl: Expire the session after this long without a write; `None` never expires it.
            session_settings: Default settings for runs that use this session.
            **redis_kwargs: Passed to `redis.asyncio.Redis.from_url` as they are
                (`max_connections`, `socket_timeout`, `retry`, ...).

        Returns:
            A session that owns its client.

        Raises:
            ValueError: The URL is not a Redis URL.
        """
        client = create_client_for_url(url, **redis_kwargs)
        # An invalid argument raises before any connection exists: nothing to close then.
        session = cls(
            session_id,
            redis_client=client,
            key_prefix=key_prefix,
            ttl=ttl,
            session_settings=session_settings,
        )
        session._owns_client = True
        return session

    @property
    def client(self) -> Redis:
        """The Redis client this session uses."""
        return self._redis

    @property
    def ttl(self) -> float | None:
        """The time-to-live in seconds, or `None` when the session does not expire."""
        return self._ttl_ms / 1000 if self._ttl_ms else None

    # -- the four operations -------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first.

        Args:
            limit: Return only the latest `limit` items (still oldest first), reading only the
                tail of the list; `0` returns `[]`. `None` uses `session_settings.limit`, else
                returns everything. A corrupt element is skipped with a logged warning and does
                not count.

        Returns:
            The items in the order they were added.

        Raises:
            ValueError: `limit` is negative.
            SessionClosedError: The session was closed.
            SessionStorageError: Redis failed.
        """
        count = check_limit(resolve_session_limit(limit, self.session_settings))
        self._check_open()
        if count == 0:
            return []
        return await self._run("get_items", lambda: self._read(count))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history in one transaction: all of them or none.

        Args:
            items: The items to append, in order. Each must be a JSON-serialisable mapping;
                every item is checked before anything is written. An empty list does nothing.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping (the message names its index).
            SessionClosedError: The session was closed.
            SessionStorageError: Redis failed; if the connection broke after the transaction was
                sent, the outcome is unknown.
        """
        encoded = encode_items(items)
        self._check_open()
        if not encoded:
            return
        await self._run("add_items", lambda: await_session_mutation(self._append(encoded)))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item, atomically.

        Returns:
            The removed item, or `None` when the history is empty. A corrupt newest element is
            removed with a logged warning and the next one is popped.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: Redis failed.
        """
        self._check_open()
        return await self._run("pop_item", lambda: await_session_mutation(self._pop_valid()))

    async def clear_session(self) -> None:
        """Remove every item of this session atomically; other sessions are untouched.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: Redis failed.
        """
        self._check_open()
        await self._run("clear_session", lambda: await_session_mutation(self._clear()))

    async def close(self) -> None:
        """Close the session; close the client too if `from_url` created it.

        Further operations raise [`SessionClosedError`][turnstore.SessionClosedError].
        Closing twice is harmless. A session belongs to the event loop it was first used on
        (its pooled connections do): another loop raises [`UserError`][turnstore.UserError],
        and `close()` there cannot release those connections, so close it on its own loop.
        """
        if self._closed:
            return
        self._closed = True
        if not self._loop_binding.is_foreign() and self._owns_client:
            await self._redis.aclose()

    def __repr__(self) -> str:
        return f"RedisSession({self.session_id!r}, key={self._items_key!r})"

    # -- internals -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"RedisSession {self.session_id!r} is closed; create a new session object"
            )
        self._loop_binding.check()

    async def _run(self, operation: str, call: Callable[[], Awaitable[_T]]) -> _T:
        try:
            return await call()
        except RedisError as exc:
            raise SessionStorageError(
                f"{operation} on session {self.session_id!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    async def _read(self, count: int | None) -> list[TResponseInputItem]:
        where = f"session {self.session_id!r}"
        raw: list[bytes | str] = await self._redis.lrange(
            self._items_key, 0 if count is None else -count, -1
        )
        valid = _decode_items(raw, where)
        if count is None or len(valid) == len(raw) or len(raw) < count:
            return valid
        # Corrupt elements in the tail: read the whole list once and take the valid tail.
        raw = await self._redis.lrange(self._items_key, 0, -1)
        return _decode_items(raw, where)[-count:]

    async def _append(self, encoded: list[str]) -> None:
        stamp = str(time.time_ns() // 1_000_000)
        await self._add(
            keys=[self._items_key, self._index_key],
            args=[self.session_id, self._ttl_ms, stamp, *(f"{stamp}|{text}" for text in encoded)],
        )

    async def _pop_valid(self) -> TResponseInputItem | None:
        while True:
            stamp = time.time_ns() // 1_000_000
            raw = await self._pop(
                keys=[self._items_key, self._index_key],
                args=[self.session_id, self._ttl_ms, stamp],
            )
            if raw is None:
                return None
            _, item = decode_element(raw, where=f"session {self.session_id!r}, newest element")
            if item is not None:
                return item

    async def _clear(self) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._items_key)
            pipe.zrem(self._index_key, self.session_id)
            await pipe.execute()


def create_client_for_url(url: str, **redis_kwargs: Any) -> Redis:
    """Create a `redis.asyncio.Redis` client for a URL, without retries unless asked.

    Args:
        url: A `redis://`, `rediss://` or `unix://` URL.
        **redis_kwargs: Passed to `Redis.from_url`.

    Returns:
        The client (no connection is opened yet).

    Raises:
        ValueError: The URL is not a Redis URL.
    """
    if not isinstance(url, str) or not url.startswith(_REDIS_SCHEMES):
        raise ValueError(
            f"not a Redis URL: {url!r}; expected redis://host:port/db, rediss://... or unix://..."
        )
    redis_kwargs.setdefault("retry", Retry(NoBackoff(), 0))
    try:
        return Redis.from_url(url, **redis_kwargs)
    except ValueError as exc:
        raise ValueError(f"not a usable Redis URL: {url!r} ({exc})") from exc
