"""EncryptedSession as a wrapper: atomic compaction, rotation of every branch, what passes through.

Real SQLite files, real PostgreSQL and Redis, the real `openai` client against the fake server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy.ext.asyncio import create_async_engine

from support.backends import delete_prefix, drop_tables, unique_prefix, unique_tables
from support.items import user
from turnstore import (
    Agent,
    OpenAIResponsesCompactionSession,
    RunConfig,
    Runner,
    SessionDecryptionError,
    SessionError,
    SessionSettings,
    SQLiteSession,
    TurnstoreError,
)
from turnstore.extensions.memory import (
    AdvancedSQLiteSession,
    EncryptedSession,
    RedisSession,
    SQLAlchemySession,
)
from turnstore.memory import is_atomic_replacement_session, is_usage_recording_session
from turnstore.memory.envelopes import master_bytes as _master_bytes
from turnstore.memory.envelopes import session_fernet as _session_fernet
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer, ScriptedModel, text_response

KEY = Fernet.generate_key().decode()
OLD_KEY = Fernet.generate_key().decode()


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}


def turns(count: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(count):
        items += [user(f"question {n}"), assistant(f"answer {n}")]
    return items


class DiesAfterOneWrite:
    """A session that forwards to a real one; once armed, the first write is the last one.

    Every write after the first raises, as if the process died right after it: what compaction
    leaves stored then is what a crash between its steps would leave.
    """

    def __init__(self, real: Any) -> None:
        self.real = real
        self.session_id = real.session_id
        self.session_settings = None
        self.armed = False
        self.writes = 0

    def _write(self) -> None:
        if self.armed:
            self.writes += 1
            if self.writes > 1:
                raise OSError("the process died here")

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await self.real.get_items(limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        self._write()
        await self.real.add_items(items)

    async def pop_item(self) -> Any:
        self._write()
        return await self.real.pop_item()

    async def clear_session(self) -> None:
        self._write()
        await self.real.clear_session()

    async def snapshot_history(self) -> Any:
        return await self.real.snapshot_history()

    async def replace_history(self, snapshot: Any, new_items: list[Any], **kw: Any) -> bool:
        self._write()
        replaced: bool = await self.real.replace_history(snapshot, new_items, **kw)
        return replaced


@pytest.fixture(params=["sqlite", "postgres", "redis"])
async def backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[[str], Any]]:
    """A factory of sessions on one real backend, cleaned up afterwards."""
    if request.param == "sqlite":
        opened: list[SQLiteSession] = []

        def sqlite_session(sid: str) -> SQLiteSession:
            opened.append(SQLiteSession(sid, tmp_path / "chat.db"))
            return opened[-1]

        yield sqlite_session
        for session in opened:
            await session.aclose()
    elif request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        engine = create_async_engine(url)
        tables = unique_tables("enc")
        yield lambda sid: SQLAlchemySession(
            sid, engine=engine, create_tables=True, sessions_table=tables[0],
            messages_table=tables[1],
        )  # fmt: skip
        await drop_tables(engine, tables)
        await engine.dispose()
    else:
        from redis.asyncio import Redis

        client = Redis.from_url(request.getfixturevalue("redis_url"))
        prefix = unique_prefix("enc")
        yield lambda sid: RedisSession(sid, redis_client=client, key_prefix=prefix)
        await delete_prefix(client, prefix)
        await client.aclose()


async def test_compaction_over_an_encrypted_session_never_leaves_it_empty(
    backend: Callable[[str], Any], fake_openai: FakeOpenAIServer
) -> None:
    FakeCompactionAPI().install(fake_openai)
    sid = f"c{uuid.uuid4().hex[:8]}"
    dying = DiesAfterOneWrite(backend(sid))
    encrypted = EncryptedSession(sid, dying, KEY)
    assert is_atomic_replacement_session(encrypted)
    await encrypted.add_items(turns(3))
    dying.armed = True
    async with fake_openai.async_client() as client:
        compacting = OpenAIResponsesCompactionSession(sid, encrypted, client=client, model="m")
        # The crash may surface as an error: what matters is what stays stored.
        with contextlib.suppress(Exception):
            await compacting.run_compaction({"force": True, "compaction_mode": "input"})
    after = await EncryptedSession(sid, backend(sid), KEY).get_items()
    assert after, "compaction left the encrypted session empty"
    assert after == turns(3) or after[-1].get("type") == "compaction"  # old or new history
    # Stored as ciphertext: the replacement encrypted what compaction wrote.
    assert all("__enc__" in item for item in await backend(sid).get_items())


def test_no_atomic_replacement_over_a_session_without_one() -> None:
    class Plain:
        session_id, session_settings = "p", None

        async def get_items(self, limit: int | None = None) -> list[Any]:
            return []

        async def add_items(self, items: list[Any]) -> None: ...

        async def pop_item(self) -> Any: ...

        async def clear_session(self) -> None: ...

    encrypted = EncryptedSession("p", Plain(), KEY)
    assert not is_atomic_replacement_session(encrypted)
    assert not hasattr(encrypted, "snapshot_history")


def raw_payloads(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT message_data FROM agent_messages").fetchall()
        rows += conn.execute("SELECT message_data FROM agent_messages_archive").fetchall()
    conn.close()
    return [json.loads(data)["payload"] for (data,) in rows]


async def test_rotation_re_encrypts_every_branch_and_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "branches.db"
    old = EncryptedSession("b", AdvancedSQLiteSession("b", path), OLD_KEY, ttl=None)
    await old.add_items(turns(3))
    assert [t["turn"] for t in await old.get_conversation_turns()] == [1, 2, 3]
    assert await old.create_branch_from_turn(2, "retry") == "retry"
    await old.add_items([user("another question 1"), assistant("another answer 1")])
    await old.switch_to_branch("main")
    await old.add_items([user("question 3")])
    await old.aclose()

    both = EncryptedSession("b", AdvancedSQLiteSession("b", path), [KEY, OLD_KEY], ttl=None)
    await both.rotate()
    await both.aclose()
    old_fernet = _session_fernet(_master_bytes(OLD_KEY, 0), "b")
    for payload in raw_payloads(path):  # no row is left that needs the old key
        with pytest.raises(InvalidToken):
            old_fernet.decrypt(payload.encode())

    new = EncryptedSession("b", AdvancedSQLiteSession("b", path), KEY, ttl=None)
    assert await new.get_items() == [*turns(3), user("question 3")]
    await new.switch_to_branch("retry")
    assert await new.get_items() == [
        *turns(1),
        user("another question 1"),
        assistant("another answer 1"),
    ]
    branches = {b["branch_id"]: b["user_turns"] for b in await new.list_branches()}
    assert branches == {"main": 4, "retry": 2}
    await new.aclose()


async def test_turns_and_search_work_on_the_decrypted_items(tmp_path: Path) -> None:
    async with EncryptedSession("a", AdvancedSQLiteSession("a", tmp_path / "a.db"), KEY) as s:
        await s.add_items([user("Where is Oslo?"), assistant("In Norway."), user("And Bergen?")])
        found = await s.find_turns_by_content("bergen")
        assert [(t["turn"], t["full_content"]) for t in found] == [(2, "And Bergen?")]
        assert [t["content"] for t in await s.get_conversation_turns()] == [
            "Where is Oslo?",
            "And Bergen?",
        ]
        by_turn = await s.get_conversation_by_turns()
        assert {turn: [e["type"] for e in entries] for turn, entries in by_turn.items()} == {
            1: ["user", "assistant"],
            2: ["user"],
        }
        assert await s.create_branch_from_content("oslo", "from-oslo") == "from-oslo"
        assert s.current_branch_id == "from-oslo"
        assert await s.get_items() == []


async def test_nothing_else_passes_through_to_the_ciphertext(tmp_path: Path) -> None:
    plain = SQLiteSession("p", tmp_path / "p.db")
    async with EncryptedSession("p", plain, KEY) as encrypted:
        # Not offered where the wrapped session lacks it: the type guards tell the truth.
        assert not is_usage_recording_session(encrypted)
        assert not hasattr(encrypted, "find_turns_by_content")
        # A method of the wrapped session that would read envelopes is refused by name.
        with pytest.raises(AttributeError, match=r"underlying_session"):
            _ = encrypted.rewrite_stored_items
        with pytest.raises(AttributeError, match=r"underlying_session"):
            _ = encrypted.run_compaction


async def test_runner_records_usage_through_the_encrypted_wrapper(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.enqueue(
        text_response("Hello", input_tokens=10, output_tokens=2),
        text_response("Again", input_tokens=5, output_tokens=1),
    )
    async with (
        fake_openai.async_client() as client,
        EncryptedSession("u", AdvancedSQLiteSession("u", tmp_path / "u.db"), KEY) as session,
    ):
        assert is_usage_recording_session(session)
        agent = Agent(name="A", model="gpt-4.1")
        config = RunConfig(openai_client=client)
        await Runner.run(agent, "Hi", session=session, run_config=config)
        await Runner.run(agent, "Hi again", session=session, run_config=config)
        usage = await session.get_turn_usage()
        assert isinstance(usage, list)
        assert [(u["user_turn_number"], u["input_tokens"]) for u in usage] == [(1, 10), (2, 5)]


async def test_a_damaged_envelope_raises_instead_of_being_skipped(tmp_path: Path) -> None:
    underlying = SQLiteSession("d", tmp_path / "d.db")
    async with EncryptedSession("d", underlying, KEY) as encrypted:
        await encrypted.add_items([user("kept")])
        await underlying.add_items([{"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": 7}])
        with pytest.raises(SessionDecryptionError, match="damaged envelope"):
            await encrypted.get_items()
        with pytest.raises(SessionDecryptionError, match="damaged envelope"):
            await encrypted.pop_item()
        assert len(await underlying.get_items()) == 2  # nothing was removed


def envelope_at(stamp: int, item: Any, sid: str) -> dict[str, Any]:
    token = _session_fernet(_master_bytes(KEY, 0), sid).encrypt_at_time(
        json.dumps(item).encode(), stamp
    )
    return {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": token.decode()}


async def test_an_item_is_readable_for_its_whole_ttl(tmp_path: Path) -> None:
    # Token times are whole seconds, cut down: an item stamped `now - 10` may have been written
    # up to a second later, so it is still within its ttl while the clock reads `now`; `now - 12`
    # is not. A read that ends in a later second proves nothing (the item may have expired by
    # then): such a try, on a machine too busy to write and read within one second, is repeated.
    for attempt in range(10):
        while time.time() % 1 > 0.5:  # start early in a second
            await asyncio.sleep(0.01)
        sid = f"t{attempt}"
        underlying = SQLiteSession(sid, tmp_path / "t.db")
        async with EncryptedSession(sid, underlying, KEY, ttl=10) as encrypted:
            now = int(time.time())
            await underlying.add_items(
                [
                    envelope_at(now - 12, user("expired"), sid),
                    envelope_at(now - 10, user("kept"), sid),
                ]
            )
            items = await encrypted.get_items()
            if int(time.time()) == now:
                assert items == [user("kept")]
                return
    pytest.fail("no try wrote and read within one second")


async def test_a_real_short_ttl_keeps_the_item_until_it_ends(tmp_path: Path) -> None:
    async with EncryptedSession("r", SQLiteSession("r", tmp_path / "r.db"), KEY, ttl=1) as s:
        while time.time() % 1 < 0.9:  # write late in a second: its token time is cut down
            await asyncio.sleep(0.005)
        written = time.time()
        await s.add_items([user("short-lived")])
        # 1.1 s after the token's time, 0.2 s after the write: within the ttl, with 0.8 s to
        # spare on a busy machine.
        await asyncio.sleep(max(0.0, written + 0.2 - time.time()))
        assert await s.get_items() == [user("short-lived")]
        await asyncio.sleep(max(0.0, written + 2.1 - time.time()))  # past ttl and the margin
        assert await s.get_items() == []


async def test_rotation_covers_the_compaction_archive(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    FakeCompactionAPI().install(fake_openai)
    path = tmp_path / "archive.db"
    async with (
        fake_openai.async_client() as client,
        EncryptedSession("z", SQLiteSession("z", path), OLD_KEY) as old,
    ):
        await old.add_items(turns(2))
        compacting = OpenAIResponsesCompactionSession("z", old, client=client, model="m")
        await compacting.run_compaction({"force": True, "compaction_mode": "input"})
        assert await old.get_archived_items() == turns(2)  # decrypted, not envelopes
    async with EncryptedSession("z", SQLiteSession("z", path), [KEY, OLD_KEY]) as both:
        await both.rotate()
    new_fernet = _session_fernet(_master_bytes(KEY, 0), "z")
    payloads = raw_payloads(path)
    assert len(payloads) > len(turns(2))  # the archive holds rows too
    for payload in payloads:
        new_fernet.decrypt(payload.encode())  # every row opens with the new key alone
    async with EncryptedSession("z", SQLiteSession("z", path), KEY) as new:
        assert await new.get_archived_items() == turns(2)


async def test_a_subclass_keeps_the_atomic_replacement(tmp_path: Path) -> None:
    class Audited(EncryptedSession):
        pass

    async with Audited("s", SQLiteSession("s", tmp_path / "s.db"), KEY) as session:
        assert isinstance(session, Audited)
        assert is_atomic_replacement_session(session)


async def test_max_scan_items_raises_rather_than_return_a_shorter_history(tmp_path: Path) -> None:
    underlying = SQLiteSession("m", tmp_path / "m.db")
    with pytest.raises(ValueError, match="max_scan_items must be positive"):
        EncryptedSession("m", underlying, KEY, max_scan_items=0)
    with pytest.raises(TypeError, match="max_scan_items"):
        EncryptedSession("m", underlying, KEY, max_scan_items=True)  # type: ignore[arg-type]
    async with EncryptedSession("m", underlying, KEY, ttl=10, max_scan_items=4) as session:
        await session.add_items([user("kept")])
        expired = envelope_at(int(time.time()) - 60, user("old"), "m")
        await underlying.add_items([expired] * 5)
        with pytest.raises(RuntimeError, match="max_scan_items exhausted"):
            await session.get_items(1)
        assert await EncryptedSession("m", underlying, KEY, ttl=10).get_items(1) == [user("kept")]


async def test_max_scan_items_is_caught_as_runtime_error_and_as_turnstore_error(
    tmp_path: Path,
) -> None:
    # RuntimeError, as the SDK raises, so ported code still catches it; and a SessionError,
    # so `except TurnstoreError` does too, whether the caller reads or a run does.
    underlying = SQLiteSession("m", tmp_path / "m.db")
    config = RunConfig(session_settings=SessionSettings(limit=1))
    async with EncryptedSession("m", underlying, KEY, ttl=10, max_scan_items=4) as session:
        await session.add_items([user("kept")])
        await underlying.add_items([envelope_at(int(time.time()) - 60, user("old"), "m")] * 5)
        for catch in (RuntimeError, TurnstoreError, SessionError):  # each as `except` matches
            with pytest.raises(catch, match="max_scan_items exhausted"):
                await session.get_items(1)
            model = ScriptedModel(["never sent"])
            with pytest.raises(catch, match="max_scan_items exhausted"):
                await Runner.run(
                    Agent(name="A", model=model), "hi", session=session, run_config=config
                )
            assert model.calls == []
