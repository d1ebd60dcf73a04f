"""EncryptedSession on SQLite, PostgreSQL and Redis: nothing readable reaches the storage."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from support.backends import delete_prefix, drop_tables, unique_prefix, unique_tables
from turnstore import SessionDecryptionError, SQLiteSession, UserError
from turnstore.extensions.memory import EncryptedSession, RedisSession, SQLAlchemySession
from turnstore.memory import SessionABC, is_atomic_replacement_session
from turnstore.memory.envelopes import master_bytes as _master_bytes
from turnstore.memory.envelopes import session_fernet as _session_fernet
from turnstore.testing import SessionConformanceTests

SECRET = "the launch code is 0000-SWORDFISH"
ITEMS: list[Any] = [
    {"role": "user", "content": SECRET},
    {"role": "assistant", "content": [{"type": "output_text", "text": f"noted: {SECRET}"}]},
]
KEY = Fernet.generate_key().decode()
OTHER_KEY = Fernet.generate_key().decode()


def raw_rows(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        rows = [
            row[0] for row in conn.execute("SELECT message_data FROM agent_messages ORDER BY id")
        ]
    conn.close()
    return rows


def old_envelope(key: str, session_id: str, item: Any, age: float) -> dict[str, Any]:
    """An envelope encrypted `age` seconds ago, as EncryptedSession would have written it."""
    fernet = _session_fernet(_master_bytes(key, 0), session_id)
    token = fernet.encrypt_at_time(json.dumps(item).encode(), int(time.time() - age))
    return {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": token.decode()}


async def test_round_trip_and_no_plaintext_in_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with EncryptedSession("s", SQLiteSession("s", path), KEY) as session:
        await session.add_items(ITEMS)
        assert await session.get_items() == ITEMS
        assert await session.get_items(1) == ITEMS[-1:]
    rows = raw_rows(path)
    assert len(rows) == 2
    blob = path.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("db.sqlite-*"))
    assert b"SWORDFISH" not in blob
    assert all(json.loads(row)["__enc__"] == 1 for row in rows)


async def test_a_wrong_key_is_a_clear_error_that_destroys_nothing(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with EncryptedSession("s", SQLiteSession("s", path), KEY) as session:
        await session.add_items(ITEMS)
    before = raw_rows(path)
    async with EncryptedSession("s", SQLiteSession("s", path), OTHER_KEY) as wrong:
        with pytest.raises(SessionDecryptionError, match="wrong key"):
            await wrong.get_items()
        with pytest.raises(SessionDecryptionError, match="Nothing was changed"):
            await wrong.pop_item()
        with pytest.raises(SessionDecryptionError):
            await wrong.rotate()
    assert raw_rows(path) == before
    async with EncryptedSession("other-id", SQLiteSession("s", path), KEY) as moved:
        with pytest.raises(SessionDecryptionError):
            await moved.get_items()  # another session id derives another key
    assert raw_rows(path) == before


async def test_ttl_skips_old_items_and_pop_drains_them(tmp_path: Path) -> None:
    underlying = SQLiteSession("s", tmp_path / "db.sqlite")
    await underlying.add_items([old_envelope(KEY, "s", {"n": 1}, age=120)])
    session = EncryptedSession("s", underlying, KEY, ttl=60)
    session._last_prune = time.monotonic()  # no prune on this write: reads must skip
    await session.add_items([{"n": 2}])
    assert await session.get_items() == [{"n": 2}]
    assert await session.pop_item() == {"n": 2}
    assert await session.pop_item() is None  # the expired item is drained, not returned
    assert await underlying.get_items() == []
    forever = EncryptedSession("s", underlying, KEY, ttl=None)
    await underlying.add_items([old_envelope(KEY, "s", {"n": 1}, age=10**6)])
    assert await forever.get_items() == [{"n": 1}]
    await session.aclose()


async def test_expired_items_are_pruned_on_write(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    underlying = SQLiteSession("s", path)
    await underlying.add_items([old_envelope(KEY, "s", {"n": i}, age=120) for i in range(3)])
    async with EncryptedSession("s", underlying, KEY, ttl=60) as session:
        await session.add_items([{"n": "new"}])
        assert await session.get_items() == [{"n": "new"}]
    rows = raw_rows(path)
    assert len(rows) == 1
    with sqlite3.connect(path) as conn:
        (archived,) = conn.execute("SELECT count(*) FROM agent_messages_archive").fetchone()
    conn.close()
    assert archived == 0  # pruned ciphertext is deleted, not archived


async def test_limit_counts_readable_items_only(tmp_path: Path) -> None:
    underlying = SQLiteSession("s", tmp_path / "db.sqlite")
    session = EncryptedSession("s", underlying, KEY, ttl=60)
    await session.add_items([{"n": 1}, {"n": 2}])
    session._last_prune = time.monotonic()
    await underlying.add_items([old_envelope(KEY, "s", {"n": "old"}, age=120)] * 5)
    assert await session.get_items(2) == [{"n": 1}, {"n": 2}]
    await session.aclose()


async def test_rotation_re_encrypts_atomically_and_keeps_each_items_age(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with EncryptedSession("s", SQLiteSession("s", path), OTHER_KEY) as old:
        await old.add_items(ITEMS)
    stamps_before = [
        Fernet.extract_timestamp(
            _session_fernet(_master_bytes(OTHER_KEY, 0), "s"), json.loads(row)["payload"].encode()
        )
        for row in raw_rows(path)
    ]
    async with EncryptedSession("s", SQLiteSession("s", path), [KEY, OTHER_KEY]) as both:
        assert await both.get_items() == ITEMS  # the old key still decrypts
        await both.add_items([{"n": 3}])  # new writes use the first key
        assert await both.rotate() == 3
        assert await both.get_items() == [*ITEMS, {"n": 3}]
    new_fernet = _session_fernet(_master_bytes(KEY, 0), "s")
    rows = raw_rows(path)
    stamps_after = [new_fernet.extract_timestamp(json.loads(r)["payload"].encode()) for r in rows]
    assert stamps_after[:2] == stamps_before
    async with EncryptedSession("s", SQLiteSession("s", path), KEY) as new_only:
        assert await new_only.get_items() == [*ITEMS, {"n": 3}]
    async with EncryptedSession("s", SQLiteSession("s", path), OTHER_KEY) as old_only:
        with pytest.raises(SessionDecryptionError):
            await old_only.get_items()
    with sqlite3.connect(path) as conn:
        archived = conn.execute("SELECT message_data FROM agent_messages_archive").fetchall()
    conn.close()
    assert archived == []  # no ciphertext under the old key stays behind


async def test_rotation_on_redis_uses_its_atomic_replacement(redis_url: str) -> None:
    # RedisSession implements AtomicReplacementSession (one Lua script): rotation works there.
    prefix = f"t:{uuid.uuid4().hex}"
    async with EncryptedSession(
        "s", RedisSession.from_url("s", redis_url, key_prefix=prefix), OTHER_KEY
    ) as old:
        await old.add_items(ITEMS)
    async with EncryptedSession(
        "s", RedisSession.from_url("s", redis_url, key_prefix=prefix), [KEY, OTHER_KEY]
    ) as both:
        assert await both.rotate() == 2
    async with EncryptedSession(
        "s", RedisSession.from_url("s", redis_url, key_prefix=prefix), KEY
    ) as new_only:
        assert await new_only.get_items() == ITEMS
        await new_only.clear_session()


class _PlainSession(SessionABC):
    """A session without an atomic replacement (a list in memory)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.session_settings = None
        self.items: list[Any] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(self.items if limit is None else self.items[len(self.items) - limit :])

    async def add_items(self, items: list[Any]) -> None:
        self.items += items

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


async def test_rotate_needs_an_atomic_replacement() -> None:
    session = EncryptedSession("s", _PlainSession("s"), KEY)
    await session.add_items(ITEMS)
    with pytest.raises(UserError, match="atomic replacement"):
        await session.rotate()
    # The encrypted session offers an atomic replacement exactly when the wrapped one does.
    assert not is_atomic_replacement_session(session)
    async with EncryptedSession("s", SQLiteSession("s"), KEY) as encrypted:
        assert is_atomic_replacement_session(encrypted)
        assert isinstance(encrypted, EncryptedSession)


async def test_reads_what_the_sdks_encrypted_session_wrote(tmp_path: Path) -> None:
    from agents import SQLiteSession as SDKSQLiteSession
    from agents.extensions.memory import EncryptedSession as SDKEncryptedSession

    path = tmp_path / "db.sqlite"
    sdk = SDKEncryptedSession("s", SDKSQLiteSession("s", path), KEY)
    await sdk.add_items(ITEMS)
    sdk.underlying_session.close()
    async with EncryptedSession("s", SQLiteSession("s", path), KEY) as ours:
        assert await ours.get_items() == ITEMS
        await ours.add_items([{"n": 3}])
    sdk = SDKEncryptedSession("s", SDKSQLiteSession("s", path), KEY)
    assert await sdk.get_items() == [*ITEMS, {"n": 3}]
    sdk.underlying_session.close()


def test_bad_arguments() -> None:
    inner = SQLiteSession("s")
    with pytest.raises(ValueError, match="non-empty list"):
        EncryptedSession("s", inner, [])
    with pytest.raises(ValueError, match="empty"):
        EncryptedSession("s", inner, "")
    with pytest.raises(TypeError, match="encryption key 1"):
        EncryptedSession("s", inner, [KEY, 42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="ttl"):
        EncryptedSession("s", inner, KEY, ttl=0)
    inner.close()
    with pytest.raises(UserError, match="underlying_session"):
        EncryptedSession("s", object(), KEY)  # type: ignore[arg-type]


async def test_item_errors_store_nothing(tmp_path: Path) -> None:
    async with EncryptedSession("s", SQLiteSession("s", tmp_path / "db"), KEY) as session:
        with pytest.raises(TypeError, match="item 1"):
            await session.add_items([{"ok": 1}, {"bad": object()}])
        assert await session.get_items() == []


@pytest.mark.services
async def test_no_plaintext_in_postgres_rows(postgres_url: str) -> None:
    engine: AsyncEngine = create_async_engine(postgres_url)
    tables = unique_tables()
    underlying = SQLAlchemySession(
        "s", engine=engine, create_tables=True, sessions_table=tables[0], messages_table=tables[1]
    )
    try:
        async with EncryptedSession("s", underlying, KEY) as session:
            await session.add_items(ITEMS)
            assert await session.get_items() == ITEMS
        async with engine.connect() as conn:
            rows = (await conn.execute(text(f'SELECT message_data FROM "{tables[1]}"'))).all()
        assert len(rows) == 2
        assert not any("SWORDFISH" in row[0] for row in rows)
    finally:
        await drop_tables(engine, tables)
        await engine.dispose()


@pytest.mark.services
async def test_no_plaintext_in_redis_keys(redis_url: str) -> None:
    prefix = unique_prefix()
    client = Redis.from_url(redis_url)
    try:
        underlying = RedisSession("s", redis_client=client, key_prefix=prefix)
        async with EncryptedSession("s", underlying, KEY) as session:
            await session.add_items(ITEMS)
            assert await session.get_items() == ITEMS
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        assert keys
        for key in keys:
            kind = (await client.type(key)).decode()
            if kind == "list":
                values = await client.lrange(key, 0, -1)
            else:
                values = [member for member, _ in await client.zrange(key, 0, -1, withscores=True)]
            assert values
            assert not any(b"SWORDFISH" in value for value in values)
    finally:
        await delete_prefix(client, prefix)
        await client.aclose()


class TestEncryptedSQLiteConformance(SessionConformanceTests):
    @pytest.fixture(autouse=True)
    def _path(self, tmp_path: Path) -> None:
        self.path = tmp_path / "conformance.db"

    async def make_session(self, session_id: str) -> Any:
        return EncryptedSession(session_id, SQLiteSession(session_id, self.path), KEY)

    async def corrupt_latest_row(self, session: Any) -> None:
        def corrupt() -> None:
            with sqlite3.connect(self.path) as conn:
                conn.execute(
                    "UPDATE agent_messages SET message_data = 'not json{' WHERE id = "
                    "(SELECT max(id) FROM agent_messages WHERE session_id = ?)",
                    (session.session_id,),
                )
            conn.close()

        await asyncio.to_thread(corrupt)
