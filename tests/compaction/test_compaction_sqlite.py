"""Compaction on SQLiteSession: one transaction, and the replaced items archived."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from turnstore import OpenAIResponsesCompactionSession, SessionStorageError, SQLiteSession
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer

from .conftest import assistant, call, compaction_in_flight, output, slow_compaction, turns, user

MODEL = "gpt-5.5"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "chats.db"


async def open_pair(
    path: Path, client: AsyncOpenAI, **kwargs: Any
) -> tuple[SQLiteSession, OpenAIResponsesCompactionSession]:
    store = SQLiteSession("chat", path, **kwargs)
    return store, OpenAIResponsesCompactionSession("chat", store, client=client, model=MODEL)


async def test_replaced_items_are_archived_and_retrievable(
    db: Path, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store, session = await open_pair(db, client)
    async with store:
        history = [*turns(5), call("c1"), output("c1"), assistant("done"), call("c2")]
        await session.add_items(history)
        usage = await session.run_compaction({"force": True})
        assert usage is not None
        assert usage.input_tokens == 40
        assert compaction_api.bodies == [{"model": MODEL, "input": history[:-1]}]
        items = await session.get_items()
        kinds = [i.get("type", "message") for i in items]
        assert kinds == ["message"] * 5 + ["compaction", "function_call"]
        assert items[-1] == call("c2")  # the pending call stays live, after the compacted items
        assert await store.get_archived_items() == history[:-1]
    # The archive survives a restart, and stays out of get_items.
    async with SQLiteSession("chat", db) as reopened:
        assert await reopened.get_archived_items() == history[:-1]
        assert len(await reopened.get_items()) == 7


async def test_second_compaction_archives_the_first_compacted_items_too(
    db: Path, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store, session = await open_pair(db, client)
    async with store:
        await session.add_items(turns(10))
        await session.run_compaction()
        first = await session.get_items()
        await session.add_items([assistant(f"more {n}") for n in range(10)])
        await session.run_compaction()
        archived = await store.get_archived_items()
        assert archived == [*turns(10), *first, *[assistant(f"more {n}") for n in range(10)]]


async def test_items_added_during_the_call_follow_the_compacted_items(
    db: Path, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store, session = await open_pair(db, client)
    async with store:
        await session.add_items(turns(10))
        compaction_api.fail_next(slow_compaction(0.5, item_id="cmp"))
        task = await compaction_in_flight(session, compaction_api)
        late = [user(f"late {n}") for n in range(20)]
        # Through the wrapper and straight into the store: both survive, in order.
        await asyncio.gather(session.add_items(late[:10]), store.add_items(late[10:]))
        await task
        items = await session.get_items()
        assert items[0]["type"] == "compaction"
        assert sorted(i["content"] for i in items[1:]) == sorted(i["content"] for i in late)
        assert await store.get_archived_items() == turns(10)


async def test_a_failing_transaction_changes_nothing(
    db: Path, fake_openai: FakeOpenAIServer, client: AsyncOpenAI
) -> None:
    FakeCompactionAPI(
        output=lambda body: [{"type": "compaction", "encrypted_content": "boom"}]
    ).install(fake_openai)
    store, session = await open_pair(db, client)
    async with store:
        await session.add_items(turns(10))
        # Make SQLite fail inside the replacement transaction, after the archive insert and the
        # delete have run.
        with sqlite3.connect(db) as conn:
            conn.execute(
                "CREATE TRIGGER fail_boom BEFORE INSERT ON agent_messages "
                "WHEN NEW.message_data LIKE '%boom%' BEGIN SELECT RAISE(ABORT, 'boom'); END"
            )
        conn.close()
        with pytest.raises(SessionStorageError):
            await session.run_compaction()
        assert await session.get_items() == turns(10)
        assert await store.get_archived_items() == []


async def test_cancellation_during_the_transaction_leaves_it_whole(
    db: Path, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    entered = asyncio.Event()

    class SlowReplace(SQLiteSession):
        async def replace_history(self, snapshot: Any, new_items: list[Any]) -> bool:
            entered.set()
            await asyncio.sleep(0)
            return await super().replace_history(snapshot, new_items)

    async with SlowReplace("chat", db) as store:
        session = OpenAIResponsesCompactionSession("chat", store, client=client, model=MODEL)
        await session.add_items(turns(10))
        task = asyncio.create_task(session.run_compaction())
        await asyncio.wait_for(entered.wait(), 10)
        for _ in range(3):
            task.cancel()
            await asyncio.sleep(0)
        with pytest.raises(asyncio.CancelledError):
            await task
        # The transaction had started: it committed whole, and the archive matches it.
        items = await session.get_items()
        assert [i.get("type", "message") for i in items] == ["message"] * 10 + ["compaction"]
        assert await store.get_archived_items() == turns(10)


async def test_a_pop_during_the_call_discards_the_result(
    db: Path, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store, session = await open_pair(db, client)
    async with store:
        await session.add_items(turns(10))
        compaction_api.fail_next(slow_compaction(0.4))
        task = await compaction_in_flight(session, compaction_api)
        await store.pop_item()
        assert await task is not None
        assert await session.get_items() == turns(10)[:-1]
        assert await store.get_archived_items() == []


async def test_the_settings_limit_does_not_hide_history_from_compaction(
    db: Path, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    store, session = await open_pair(db, client, session_settings={"limit": 4})
    async with store:
        await session.add_items(turns(10))
        assert len(await session.get_items()) == 4
        await session.run_compaction()
        assert compaction_api.bodies[0]["input"] == turns(10)
        assert await store.get_archived_items() == turns(10)


async def test_snapshot_prefix_skips_nothing_across_corrupt_rows(db: Path) -> None:
    async with SQLiteSession("chat", db) as store:
        await store.add_items([user("a"), user("b")])
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('chat', 'not json')"
            )
        conn.close()
        await store.add_items([user("c")])
        snapshot = await store.snapshot_history()
        assert snapshot.items == [user("a"), user("b"), user("c")]
        assert len(snapshot.rows) == 4
        part = snapshot.prefix(2)
        assert (part.items, len(part.rows), part.rows[-1]) == (
            [user("a"), user("b")],
            2,
            snapshot.rows[snapshot.item_rows[1]],
        )
        whole = snapshot.prefix(3)
        assert (len(whole.rows), whole.rows[-1]) == (4, snapshot.rows[-1])
        with pytest.raises(ValueError, match="cannot narrow"):
            snapshot.prefix(0)
        assert await store.replace_history(part, [user("ab")])
        assert await store.get_items() == [user("ab"), user("c")]
        assert await store.get_archived_items() == [user("a"), user("b")]
