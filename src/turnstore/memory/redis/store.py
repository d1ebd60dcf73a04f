"""The CLI's store for the keys of `RedisSession`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...exceptions import SessionStorageError
from ..codec import encode_items
from ..session import Session
from ..store import (
    SessionInfo,
    SessionRecord,
    SessionStats,
    SessionStore,
    _check_page,
    _from_ms,
    _hide_password,
    _to_ms,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

# Drop an index entry whose list no longer exists (expired or emptied), atomically.
_PRUNE_SCRIPT = """
local removed = 0
for i, sid in ipairs(ARGV) do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    removed = removed + redis.call('ZREM', KEYS[#KEYS], sid)
  end
end
return removed
"""


class RedisStore(SessionStore):
    """The keys of `RedisSession` under one prefix."""

    backend = "redis"

    def __init__(self, url: str, key_prefix: str) -> None:
        from .session import create_client_for_url, index_key

        if not key_prefix:
            raise ValueError("key_prefix must not be empty")
        self._redis: Redis = create_client_for_url(url)
        self.target = _hide_password(url)
        self._prefix = key_prefix
        self._index = index_key(key_prefix)
        self._prune = self._redis.register_script(_PRUNE_SCRIPT)

    def _items_key(self, session_id: str) -> str:
        from .session import items_key

        return items_key(self._prefix, session_id)

    async def _call(self, work: Any) -> Any:
        from redis.exceptions import RedisError

        try:
            return await work()
        except RedisError as exc:
            raise SessionStorageError(f"{self.target}: {type(exc).__name__}: {exc}") from exc

    async def _describe(self, entries: list[tuple[str, float]]) -> list[SessionInfo]:
        if not entries:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for session_id, _ in entries:
                pipe.llen(self._items_key(session_id))
                pipe.lindex(self._items_key(session_id), 0)
            replies = await pipe.execute()
        infos, gone = [], []
        for (session_id, score), count, first in zip(
            entries, replies[::2], replies[1::2], strict=True
        ):
            if not count:
                gone.append(session_id)
                continue
            infos.append(SessionInfo(session_id, count, _first_stamp(first), _from_ms(score)))
        if gone:
            await self._prune(keys=[*(self._items_key(g) for g in gone), self._index], args=gone)
        return infos

    async def list_sessions(self, *, offset: int = 0, limit: int = 50) -> list[SessionInfo]:
        """Return sessions, the most recently active first; expired ones are dropped."""
        _check_page(offset, limit)

        async def work() -> list[SessionInfo]:
            raw = await self._redis.zrevrange(
                self._index, offset, offset + limit - 1, withscores=True
            )
            return await self._describe(_scored(raw))

        result: list[SessionInfo] = await self._call(work)
        return result

    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist (or has expired)."""

        async def work() -> SessionInfo | None:
            score = await self._redis.zscore(self._index, session_id)
            if score is None:
                return None
            infos = await self._describe([(session_id, score)])
            return infos[0] if infos else None

        result: SessionInfo | None = await self._call(work)
        return result

    async def stats(self) -> SessionStats:
        """Return the number of sessions and items, and the last activity."""

        async def work() -> SessionStats:
            sessions = items = 0
            last: float | None = None
            start = 0
            while True:
                page = await self._redis.zrevrange(self._index, start, start + 499, withscores=True)
                infos = await self._describe(_scored(page))
                for info in infos:
                    sessions += 1
                    items += info.item_count
                    if info.last_activity is not None:
                        stamp = info.last_activity.timestamp()
                        last = stamp if last is None else max(last, stamp)
                if len(page) < 500:
                    break
                start += 500 - (len(page) - len(infos))
            return SessionStats(
                "redis", sessions, items, None if last is None else _from_ms(last * 1000)
            )

        result: SessionStats = await self._call(work)
        return result

    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first."""
        from .session import decode_element

        async def work() -> list[SessionRecord]:
            raw = await self._redis.lrange(self._items_key(session_id), 0, -1)
            records = []
            for index, element in enumerate(raw):
                stamp, item = decode_element(element, where=f"session {session_id!r} #{index}")
                if item is not None:
                    records.append(SessionRecord(session_id, item, _from_ms(stamp)))
            return records

        result: list[SessionRecord] = await self._call(work)
        return result

    async def write_records(self, session_id: str, records: list[SessionRecord]) -> None:
        """Append records to a session in one transaction, keeping their `created_at`."""
        encoded = encode_items([record.item for record in records])
        if not encoded:
            return
        now = _to_ms(datetime.now(UTC))
        stamps = [now if r.created_at is None else _to_ms(r.created_at) for r in records]
        elements = [f"{stamp}|{data}" for stamp, data in zip(stamps, encoded, strict=True)]

        async def work() -> None:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.rpush(self._items_key(session_id), *elements)
                pipe.zadd(self._index, {session_id: now})
                await pipe.execute()

        await self._call(work)

    def session(self, session_id: str) -> Session:
        """Return a `RedisSession` that shares the store's client."""
        from .session import RedisSession

        return RedisSession(session_id, redis_client=self._redis, key_prefix=self._prefix)

    async def close(self) -> None:
        """Close the store's client."""
        await self._redis.aclose()


def _scored(raw: Any) -> list[tuple[str, float]]:
    return [(_text(member), float(score)) for member, score in raw]


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _first_stamp(element: bytes | str | None) -> datetime | None:
    if element is None:
        return None
    stamp = _text(element).partition("|")[0]
    return _from_ms(int(stamp)) if stamp.isdigit() else None
