"""EncryptedSession's key rotation and expiry pruning, done through the atomic replacement.

Run on a SQLite file, PostgreSQL (directly and through PgBouncer), Redis and the Redis Cluster.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from cryptography.fernet import Fernet

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from support.items import user
from turnstore import SessionDecryptionError, SQLiteSession
from turnstore.extensions.memory import EncryptedSession
from turnstore.memory.envelopes import master_bytes as _master_bytes
from turnstore.memory.envelopes import session_fernet as _session_fernet

NEW = Fernet.generate_key().decode()
OLD = Fernet.generate_key().decode()
STRANGER = Fernet.generate_key().decode()


def aged_envelope(key: str, session_id: str, item: Any, age: float) -> dict[str, Any]:
    fernet = _session_fernet(_master_bytes(key, 0), session_id)
    token = fernet.encrypt_at_time(json.dumps(item).encode(), int(time.time() - age))
    return {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": token.decode()}


async def test_rotate_leaves_only_new_key_ciphertext(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    old = EncryptedSession(sid, backend.session(sid), OLD, ttl=None)
    await old.add_items([user("one"), user("two")])
    both = EncryptedSession(sid, backend.session(sid), [NEW, OLD], ttl=None)
    await both.add_items([user("three")])
    assert await both.rotate() == 3
    only_new = EncryptedSession(sid, backend.session(sid), NEW, ttl=None)
    assert await only_new.get_items() == [user("one"), user("two"), user("three")]
    with pytest.raises(SessionDecryptionError):
        await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).get_items()
    if backend.name == "sqlite":
        assert await raw.get_archived_items() == []  # no old ciphertext kept in the archive


async def test_rotate_with_an_unreadable_item_changes_nothing(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    await EncryptedSession(sid, backend.session(sid), STRANGER, ttl=None).add_items([user("x")])
    await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).add_items([user("y")])
    before = await raw.get_items()
    with pytest.raises(SessionDecryptionError):
        await EncryptedSession(sid, backend.session(sid), [NEW, OLD], ttl=None).rotate()
    assert await raw.get_items() == before


async def test_writes_during_rotation_survive(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    writer = EncryptedSession(sid, backend.session(sid), [NEW, OLD], ttl=None)
    await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).add_items(
        [user(f"old {n}") for n in range(100)]
    )
    rotator = EncryptedSession(sid, backend.session(sid), [NEW, OLD], ttl=None)

    async def write() -> None:
        for n in range(10):
            await writer.add_items([user(f"new {n}")])
            await asyncio.sleep(0)

    await asyncio.gather(write(), rotator.rotate())
    await rotator.rotate()  # whatever landed meanwhile
    items = await EncryptedSession(sid, backend.session(sid), NEW, ttl=None).get_items()
    assert items == [user(f"old {n}") for n in range(100)] + [user(f"new {n}") for n in range(10)]


async def test_prune_expired_deletes_from_storage(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    await raw.add_items([aged_envelope(NEW, sid, user("stale"), 3600)])
    session = EncryptedSession(sid, backend.session(sid), NEW, ttl=60)
    await session.add_items([user("fresh")])  # the first write prunes (atomic replacement)
    assert await session.get_items() == [user("fresh")]
    assert len(await raw.get_items()) == 1


async def test_add_items_does_not_fail_after_storing_when_pruning_fails(
    backend: Backend,
) -> None:
    """A write that stored its items must not raise: a caller would retry and store it twice.

    Another writer of the session (another key, or a rotation in progress elsewhere) left an
    item this object cannot open. `add_items` stores the new item, then its opportunistic
    prune meets the unreadable item.
    """
    raw = backend.session()
    sid = raw.session_id
    await EncryptedSession(sid, backend.session(sid), STRANGER, ttl=None).add_items([user("x")])
    session = EncryptedSession(sid, backend.session(sid), NEW, ttl=600)
    await session.add_items([user("mine")])  # must not raise: the item is stored
    stored = await raw.get_items()
    assert len(stored) == 2
    opened = EncryptedSession(sid, backend.session(sid), [NEW, STRANGER], ttl=None)
    assert await opened.get_items() == [user("x"), user("mine")]


async def test_encrypted_session_replaces_with_ciphertext(tmp_path: Any) -> None:
    # Its atomic replacement reads plaintext and stores envelopes, never the other way round.
    underlying = SQLiteSession("s", tmp_path / "e.db")
    session = EncryptedSession("s", underlying, NEW)
    await session.add_items([user("a"), user("b")])
    snapshot = await session.snapshot_history()
    assert snapshot.items == [user("a"), user("b")]
    assert await session.replace_history(snapshot.prefix(1), [user("A")])
    assert await session.get_items() == [user("A"), user("b")]
    assert all("__enc__" in item for item in await underlying.get_items())
    await session.aclose()
