"""The CLI's store for the keys of `RedisSession`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...exceptions import SessionStorageError
from .._store_helpers import from_ms, hide_password, to_ms
from ..closing import warn_if_unclosed
from ..records import EncodedWrite, SessionInfo, SessionRecord, SessionStats
from ..session import Session
from ..store import SessionStore
from .keys import decode_element, encode_element, layout_for, split_stamp
from .scripts import IMPORT, PRUNE

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.cluster import RedisCluster

# Delete the sessions in ARGV[2..] whose index score is still below ARGV[1] (a session
# written to since it was read is kept, as is one written in the cutoff's millisecond),
# atomically. KEYS: their item lists, then the index.
_DELETE_IDLE_SCRIPT = """
local cutoff = tonumber(ARGV[1])
local index = KEYS[#KEYS]
local deleted = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', index, ARGV[i])
  if score and tonumber(score) < cutoff then
    redis.call('DEL', KEYS[i - 1])
    redis.call('ZREM', index, ARGV[i])
    deleted = deleted + 1
  end
end
return deleted
"""

_PAGE = 500
"""Index entries read (or deleted) per round trip."""


class RedisStore(SessionStore):
    """The keys of `RedisSession` under one prefix, on a single Redis server or on a Redis Cluster.

    On a cluster each hash slot has its own index (see keys.py): listing finds the indexes with
    `SCAN` on every primary and merges them.
    """

    backend = "redis"

    def __init__(self, url: str, key_prefix: str) -> None:
        from .session import create_client_for_url

        if not key_prefix:
            raise ValueError("key_prefix must not be empty")
        self._redis: Redis | RedisCluster = create_client_for_url(url)
        self.target = hide_password(url)
        self._prefix = key_prefix
        self._layout = layout_for(self._redis, key_prefix)
        self._prune = self._redis.register_script(PRUNE)
        self._write = self._redis.register_script(IMPORT)
        self._delete_idle = self._redis.register_script(_DELETE_IDLE_SCRIPT)
        self._unclosed = warn_if_unclosed(self, f"the session store on {self.target!r}")

    async def _call(self, work: Any) -> Any:
        from .session import CLIENT_ERRORS, ready

        try:
            await ready(self._redis)
            return await work()
        except CLIENT_ERRORS as exc:
            raise SessionStorageError(f"{self.target}: {type(exc).__name__}: {exc}") from exc

    async def _describe(self, entries: list[tuple[str, float]]) -> list[SessionInfo]:
        if not entries:
            return []
        items_key = self._layout.items_key
        async with self._redis.pipeline(transaction=False) as pipe:
            for session_id, _ in entries:
                pipe.llen(items_key(session_id))
                pipe.lindex(items_key(session_id), 0)
            replies = await pipe.execute()
        infos: list[SessionInfo] = []
        gone: dict[str, list[str]] = {}  # index key -> its sessions whose list is gone
        for (session_id, score), count, first in zip(
            entries, replies[::2], replies[1::2], strict=True
        ):
            if not count:
                gone.setdefault(self._layout.index_key(session_id), []).append(session_id)
                continue
            infos.append(SessionInfo(session_id, count, _first_stamp(first), from_ms(score)))
        for index, session_ids in gone.items():
            # An index and the lists it indexes share a hash slot: one script per index.
            await self._prune(keys=[*map(items_key, session_ids), index], args=session_ids)
        return infos

    async def _newest(self, offset: int, count: int) -> list[tuple[str, float]]:
        """Index entries `offset` to `offset + count`, the most recently active first."""
        keys = await self._layout.index_keys(self._redis)
        if not self._layout.cluster:
            raw = await self._redis.zrevrange(keys[0], offset, offset + count - 1, withscores=True)
            return _scored(raw)
        # One index per used hash slot: take the newest `offset + count` of each, then merge.
        async with self._redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.zrevrange(key, 0, offset + count - 1, withscores=True)
            pages = await pipe.execute()
        merged = _newest_first([entry for page in pages for entry in _scored(page)])
        return merged[offset : offset + count]

    async def _newest_after(
        self, cursor: tuple[str, float] | None, count: int
    ) -> list[tuple[str, float]]:
        """The `count` index entries that follow `cursor` newest first, by (score, id).

        Entries scored as the cursor are read too (`ZCOUNT` says how many), so that a run of
        equal scores longer than `count` neither loops nor skips.
        """
        if cursor is None:
            return await self._newest(0, count)
        score, session_id = cursor[1], cursor[0]
        keys = await self._layout.index_keys(self._redis)
        async with self._redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.zcount(key, score, score)
            ties = await pipe.execute()
        async with self._redis.pipeline(transaction=False) as pipe:
            for key, tied in zip(keys, ties, strict=True):
                pipe.zrevrangebyscore(
                    key, score, "-inf", start=0, num=count + int(tied), withscores=True
                )
            pages = await pipe.execute()
        after = [
            entry
            for page in pages
            for entry in _scored(page)
            if entry[1] < score or (entry[1] == score and entry[0] < session_id)
        ]
        return _newest_first(after)[:count]

    async def _list_sessions(self, offset: int, limit: int, prefix: str) -> list[SessionInfo]:
        """Return sessions, the most recently active first; expired ones are dropped.

        Without a prefix a page is one range read of the index (of every index, merged, on a
        cluster). When sessions of that window are gone by the time they are described, and
        with a prefix on a single server, the index is walked on, newest first, by key (score, id)
        and not by position: sessions written, created or deleted meanwhile neither repeat an
        entry nor skip one, and each read moves down the index, so a listing ends however
        fast sessions come and go. With a prefix on a cluster every index is read once, as a
        walk reads them (not once per page of the walk).
        """

        async def work() -> list[SessionInfo]:
            if prefix and self._layout.cluster:
                entries = await self._every_index_entry()
                matching = [entry for entry in entries if entry[0].startswith(prefix)]
                found: list[SessionInfo] = []
                skip = offset
                for start in range(0, len(matching), _PAGE):
                    infos = await self._describe(matching[start : start + _PAGE])
                    found += infos[skip:][: limit - len(found)]
                    skip = max(0, skip - len(infos))
                    if len(found) == limit:
                        break
                return found
            count = _PAGE if prefix else limit
            page = await (
                self._newest_after(None, count) if prefix else self._newest(offset, count)
            )
            seen: set[str] = set()
            found, skip = [], offset if prefix else 0
            while True:
                matching = [e for e in page if e[0].startswith(prefix) and e[0] not in seen]
                seen.update(entry[0] for entry in matching)
                infos = await self._describe(matching)
                found += infos[skip:][: limit - len(found)]
                skip = max(0, skip - len(infos))
                if len(found) == limit or len(page) < count:
                    return found
                count = _PAGE if prefix else limit - len(found)
                page = await self._newest_after(page[-1], count)

        result: list[SessionInfo] = await self._call(work)
        return result

    async def _iter_sessions(self, prefix: str) -> AsyncIterator[SessionInfo]:
        """Every session that exists for the whole walk, at least once (the caller dedupes).

        One Redis: `ZSCAN` of the index, whose cursor is not moved by writes (a write changes a
        score, not a position in the scan) nor by deletions. A cluster: each slot's index is
        read whole, once.
        """
        if not self._layout.cluster:
            async for info in self._scan_index(prefix):
                yield info
            return
        entries: list[tuple[str, float]] = await self._call(self._every_index_entry)
        entries = [entry for entry in entries if entry[0].startswith(prefix)]
        for start in range(0, len(entries), _PAGE):
            page = entries[start : start + _PAGE]
            infos: list[SessionInfo] = await self._call(lambda page=page: self._describe(page))
            for info in infos:
                yield info

    async def _scan_index(self, prefix: str) -> AsyncIterator[SessionInfo]:
        """Every session of the one index, by `ZSCAN` (see `_iter_sessions`)."""
        (index,) = await self._call(lambda: self._layout.index_keys(self._redis))
        cursor = 0
        while True:
            reply = await self._call(
                lambda cursor=cursor: self._redis.zscan(index, cursor, count=_PAGE)
            )
            cursor = int(reply[0])
            entries = [entry for entry in _scored(reply[1]) if entry[0].startswith(prefix)]
            infos: list[SessionInfo] = await self._call(
                lambda entries=entries: self._describe(entries)
            )
            for info in infos:
                yield info
            if cursor == 0:
                return

    async def _every_index_entry(self) -> list[tuple[str, float]]:
        """Every entry of every index, the most recently active first (one read per index)."""
        keys = await self._layout.index_keys(self._redis)
        merged: list[tuple[str, float]] = []
        for start in range(0, len(keys), _PAGE):
            async with self._redis.pipeline(transaction=False) as pipe:
                for key in keys[start : start + _PAGE]:
                    pipe.zrange(key, 0, -1, withscores=True)
                for page in await pipe.execute():
                    merged += _scored(page)
        return _newest_first(merged)

    async def _delete_idle_before(self, cutoff: datetime) -> int:
        """Delete every session idle for longer than `older_than`, 500 per atomic script."""
        cutoff_ms = to_ms(cutoff)

        async def work() -> int:
            deleted = 0
            # One index per hash slot on a cluster: each script touches one index and the
            # sessions it lists, which share its slot.
            for index in await self._layout.index_keys(self._redis):
                while True:
                    raw = await self._redis.zrangebyscore(
                        index, "-inf", f"({cutoff_ms}", start=0, num=_PAGE
                    )
                    ids = [_text(member) for member in raw if isinstance(member, bytes | str)]
                    if not ids:
                        break
                    keys = [*(self._layout.items_key(sid) for sid in ids), index]
                    deleted += int(await self._delete_idle(keys=keys, args=[cutoff_ms, *ids]))
                    if len(ids) < _PAGE:
                        break
            return deleted

        result: int = await self._call(work)
        return result

    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist (or has expired)."""

        async def work() -> SessionInfo | None:
            score = await self._redis.zscore(self._layout.index_key(session_id), session_id)
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
            for index in await self._layout.index_keys(self._redis):
                start = 0
                while True:
                    page = await self._redis.zrevrange(
                        index, start, start + _PAGE - 1, withscores=True
                    )
                    infos = await self._describe(_scored(page))
                    for info in infos:
                        sessions += 1
                        items += info.item_count
                        if info.last_activity is not None:
                            stamp = info.last_activity.timestamp()
                            last = stamp if last is None else max(last, stamp)
                    if len(page) < _PAGE:
                        break
                    start += _PAGE - (len(page) - len(infos))  # pruned entries moved the rest
            return SessionStats(
                "redis", sessions, items, None if last is None else from_ms(last * 1000)
            )

        result: SessionStats = await self._call(work)
        return result

    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first."""

        async def work() -> list[SessionRecord]:
            raw = await self._redis.lrange(self._layout.items_key(session_id), 0, -1)
            records = []
            for index, element in enumerate(raw):
                stamp, item = decode_element(
                    element, where=f"element {index} of session {session_id!r}"
                )
                if item is not None:
                    records.append(SessionRecord(session_id, item, from_ms(stamp)))
            return records

        result: list[SessionRecord] = await self._call(work)
        return result

    async def _write_encoded(self, write: EncodedWrite) -> None:
        session_id = write.session_id
        # One Lua script: atomic.
        stamps = [to_ms(at) for at in write.created]
        elements = [encode_element(s, data) for s, data in zip(stamps, write.encoded, strict=True)]
        keys = [self._layout.items_key(session_id), self._layout.index_key(session_id)]
        activity = "" if write.last_activity is None else str(to_ms(write.last_activity))
        args = [session_id, "1" if write.replace else "0", activity, *elements]

        async def work() -> None:
            await self._write(keys=keys, args=args)

        await self._call(work)

    def session(self, session_id: str) -> Session:
        """Return a `RedisSession` that shares the store's client."""
        from .session import RedisSession

        return RedisSession(session_id, redis_client=self._redis, key_prefix=self._prefix)

    async def aclose(self) -> None:
        """Close the store's client."""
        if self._unclosed.detach() is not None:
            await self._redis.aclose()


def _newest_first(entries: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Index entries of several indexes in the order of one index read newest first."""
    # A sorted set read newest first orders by score, then by id, both descending.
    return sorted(entries, key=lambda entry: (entry[1], entry[0]), reverse=True)


def _scored(raw: Any) -> list[tuple[str, float]]:
    return [(_text(member), float(score)) for member, score in raw]


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _first_stamp(element: bytes | str | None) -> datetime | None:
    if element is None:
        return None
    return from_ms(split_stamp(_text(element))[0])
