"""EncryptedSession never deletes what it cannot read: plaintext items, undecodable rows.

Its expiry sweep (after a write, or `prune_expired`), `rotate`, `pop_item` and compaction
through it, on a SQLite file,
PostgreSQL (directly and through PgBouncer), Redis and the Redis Cluster.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from support.items import user
from support.sqlite_rows import corrupt_newest_row, count_rows
from turnstore import OpenAIResponsesCompactionSession, SessionDecryptionError, SQLiteSession
from turnstore.extensions.memory import EncryptedSession
from turnstore.memory.envelopes import master_bytes as _master_bytes
from turnstore.memory.envelopes import session_fernet as _session_fernet
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer

KEY = Fernet.generate_key().decode()
OLD = Fernet.generate_key().decode()


def aged_envelope(key: str, session_id: str, item: Any, age: float) -> dict[str, Any]:
    fernet = _session_fernet(_master_bytes(key, 0), session_id)
    token = fernet.encrypt_at_time(json.dumps(item).encode(), int(time.time() - age))
    return {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": token.decode()}


def plaintext(stored: list[Any]) -> list[Any]:
    return [item for item in stored if "__enc__" not in item]


async def test_the_first_write_keeps_plaintext_items_already_stored(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    await raw.add_items([user("plain 1"), user("plain 2")])
    session = EncryptedSession(sid, backend.session(sid), KEY)  # ttl=600: the write sweeps
    await session.add_items([user("secret")])
    stored = await raw.get_items()
    assert stored[:2] == [user("plain 1"), user("plain 2")]
    assert len(stored) == 3
    assert await session.get_items() == [user("secret")]


async def test_the_sweep_drops_only_expired_envelopes_and_keeps_plaintext_in_place(
    backend: Backend,
) -> None:
    raw = backend.session()
    sid = raw.session_id
    await raw.add_items(
        [
            user("plain 1"),
            aged_envelope(KEY, sid, user("stale"), 3600),
            user("plain 2"),
            aged_envelope(KEY, sid, user("recent"), 5),
            user("plain 3"),
        ]
    )
    session = EncryptedSession(sid, backend.session(sid), KEY, ttl=60)
    await session.add_items([user("fresh")])
    stored = await raw.get_items()
    assert plaintext(stored) == [user("plain 1"), user("plain 2"), user("plain 3")]
    assert stored[0] == user("plain 1")
    assert stored[1] == user("plain 2")
    assert len(stored) == 5  # only the stale envelope went
    assert await session.get_items() == [user("recent"), user("fresh")]
    assert await session.prune_expired() == 2  # nothing left to drop: readable items counted
    assert await raw.get_items() == stored


async def test_rotate_keeps_plaintext_items(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).add_items([user("a")])
    await raw.add_items([user("plain")])
    await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).add_items([user("b")])
    both = EncryptedSession(sid, backend.session(sid), [KEY, OLD], ttl=None)
    assert await both.rotate() == 2
    assert plaintext(await raw.get_items()) == [user("plain")]
    only_new = EncryptedSession(sid, backend.session(sid), KEY, ttl=None)
    assert await only_new.get_items() == [user("a"), user("b")]


async def test_compaction_keeps_plaintext_items_and_compacts_the_encrypted_ones(
    backend: Backend, fake_openai: FakeOpenAIServer
) -> None:
    FakeCompactionAPI().install(fake_openai)
    raw = backend.session()
    sid = raw.session_id
    await raw.add_items([user("plain 1")])
    encrypted = EncryptedSession(sid, backend.session(sid), KEY)
    await encrypted.add_items([user("secret 1"), {"role": "assistant", "content": "answer 1"}])
    await raw.add_items([user("plain 2")])
    await encrypted.add_items([user("secret 2"), {"role": "assistant", "content": "answer 2"}])
    async with fake_openai.async_client() as client:
        compacting = OpenAIResponsesCompactionSession(sid, encrypted, client=client, model="m")
        await compacting.run_compaction({"force": True, "compaction_mode": "input"})
    after = await encrypted.get_items()
    assert after[-1]["type"] == "compaction", after  # the encrypted history was compacted
    assert user("plain 1") not in after  # plaintext is still never read
    assert plaintext(await raw.get_items()) == [user("plain 1"), user("plain 2")]


async def test_pop_item_over_plaintext_removes_nothing(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    await raw.add_items([user("plain 1"), user("plain 2")])
    session = EncryptedSession(sid, backend.session(sid), KEY)
    assert await session.pop_item() is None
    assert await raw.get_items() == [user("plain 1"), user("plain 2")]


async def test_pop_item_removes_the_newest_readable_item_from_under_plaintext(
    backend: Backend,
) -> None:
    raw = backend.session()
    sid = raw.session_id
    session = EncryptedSession(sid, backend.session(sid), KEY)
    await session.add_items([user("a")])
    await raw.add_items([user("plain 1")])
    await session.add_items([user("b")])
    await raw.add_items([user("plain 2")])
    assert await session.get_items() == [user("a"), user("b")]
    assert await session.pop_item() == user("b")
    stored = await raw.get_items()
    assert stored[1:] == [user("plain 1"), user("plain 2")]
    assert len(stored) == 3
    assert await session.get_items() == [user("a")]
    assert await session.pop_item() == user("a")
    assert await raw.get_items() == [user("plain 1"), user("plain 2")]
    assert await session.pop_item() is None
    assert await raw.get_items() == [user("plain 1"), user("plain 2")]


async def test_pop_item_still_pops_a_readable_newest_item_directly(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    await raw.add_items([user("plain")])
    session = EncryptedSession(sid, backend.session(sid), KEY)
    await session.add_items([user("a"), user("b")])
    assert await session.pop_item() == user("b")
    assert await session.pop_item() == user("a")
    assert await raw.get_items() == [user("plain")]


class _NoReplacement:
    """A session without an atomic replacement (it wraps a SQLiteSession)."""

    def __init__(self, real: SQLiteSession) -> None:
        self.real = real
        self.session_id = real.session_id
        self.session_settings = None

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await self.real.get_items(limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        await self.real.add_items(items)

    async def pop_item(self) -> Any:
        return await self.real.pop_item()

    async def clear_session(self) -> None:
        await self.real.clear_session()


async def test_pop_item_under_plaintext_without_atomic_replacement_raises_and_keeps_all(
    tmp_path: Path,
) -> None:
    async with SQLiteSession("s", tmp_path / "s.db") as real:
        session = EncryptedSession("s", _NoReplacement(real), KEY)
        await session.add_items([user("a")])
        await real.add_items([user("plain")])
        before = await real.get_items()
        with pytest.raises(SessionDecryptionError, match="not an encrypted envelope"):
            await session.pop_item()
        assert await real.get_items() == before
        await real.pop_item()  # what the message advises; then the readable item pops
        assert await session.pop_item() == user("a")


async def test_the_sweep_keeps_rows_the_wrapped_session_cannot_decode(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SQLiteSession("s", path) as raw:
        await raw.add_items([user("to corrupt")])
        corrupt_newest_row(str(path), "s")
        await raw.add_items([aged_envelope(KEY, "s", user("stale"), 3600)])
        session = EncryptedSession("s", SQLiteSession("s", path), KEY, ttl=60)
        await session.add_items([user("fresh")])
        assert count_rows(str(path), "s") == 3  # the undecodable row stays
        assert await session.get_items() == [user("fresh")]
        await session.aclose()
