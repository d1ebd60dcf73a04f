"""What is specific to SQLiteSession: schema, threads, group commit, close, the stored JSON."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from support.sqlite_rows import trace_sqlite_calls, writer_meets_the_lock
from turnstore import (
    SessionClosedError,
    SessionSchemaError,
    SessionSettings,
    SessionStorageError,
    SQLiteSession,
)
from turnstore.memory.sqlite.schema import SCHEMA_VERSION


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "sessions.db")


def query(path: str, sql: str, *args: Any) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def execute(path: str, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(sql, args)
    finally:
        conn.close()


def overwrite_rows(path: str, stored: dict[int, object]) -> None:
    """Store raw `message_data` in the rows at these offsets (oldest first), as a bad writer
    or a damaged file would."""
    for offset, data in stored.items():
        execute(
            path,
            "UPDATE agent_messages SET message_data = ? WHERE id = "
            "(SELECT id FROM agent_messages ORDER BY id LIMIT 1 OFFSET ?)",
            data,
            offset,
        )


# --- construction ----------------------------------------------------------------------------


def test_constructor_touches_nothing(db_path: str) -> None:
    session = SQLiteSession("s", db_path)
    assert not os.path.exists(db_path)
    assert session.db_path == db_path
    assert session.session_settings == SessionSettings()
    session.close()
    assert not os.path.exists(db_path)


@pytest.mark.parametrize(
    "name",
    [
        "bad name",
        "x;drop",
        "1abc",
        "",
        "a-b",
        'q"uote',
        "sqlite_master",
        "x" * 64,
        "é" * 25,  # 50 bytes of UTF-8
        '""',
        '"bad name"',
        '"a"b"',
        '"sqlite_x"',
    ],
)
def test_table_names_must_be_plain_identifiers(name: str) -> None:
    with pytest.raises(ValueError, match="plain SQL identifier"):
        SQLiteSession("s", sessions_table=name)
    with pytest.raises(ValueError, match="messages_table"):
        SQLiteSession("s", messages_table=name)


async def test_quoted_and_non_ascii_table_names_name_the_tables_inside_the_quotes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "names.db"
    async with SQLiteSession(
        "s", path, sessions_table='"quoted_sessions"', messages_table="ßmessages"
    ) as session:
        assert (session.sessions_table, session.messages_table) == (
            "quoted_sessions",
            "ßmessages",
        )
        await session.add_items([{"role": "user", "content": "quoted"}])
    # The bare name and the quoted one are the same table, as in SQL.
    async with SQLiteSession(
        "s", path, sessions_table="quoted_sessions", messages_table='"ßmessages"'
    ) as again:
        assert await again.get_items() == [{"role": "user", "content": "quoted"}]
    conn = sqlite3.connect(path)
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert {"quoted_sessions", "ßmessages", "ßmessages_archive"} <= names


def test_table_name_types_and_clashes() -> None:
    with pytest.raises(TypeError, match="sessions_table must be a str"):
        SQLiteSession("s", sessions_table=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="different tables"):
        SQLiteSession("s", sessions_table="same", messages_table="SAME")
    with pytest.raises(ValueError, match="different tables"):
        SQLiteSession("s", sessions_table="m_archive", messages_table="m")
    with pytest.raises(TypeError, match="session_id must be a str"):
        SQLiteSession(42)  # type: ignore[arg-type]


async def test_custom_table_names_and_pathlike(tmp_path: Path) -> None:
    path = tmp_path / "custom.db"
    async with SQLiteSession("s", path, sessions_table="S_1", messages_table="_msgs") as session:
        await session.add_items([user("a")])
        assert texts(await session.get_items()) == ["a"]
    names = {row[0] for row in query(str(path), "SELECT name FROM sqlite_master")}
    assert {"S_1", "_msgs", "_msgs_archive", "idx__msgs_session_id"} <= names


# --- schema --------------------------------------------------------------------------------------


async def test_schema_is_created_on_first_use_with_version_and_timestamps(db_path: str) -> None:
    async with SQLiteSession("s", db_path) as session:
        assert await session.get_items() == []
        assert os.path.exists(db_path)
        assert query(db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
        assert query(db_path, "PRAGMA journal_mode") == [("wal",)]
        await session.add_items([user("a"), user("b")])
    rows = query(db_path, "SELECT session_id, created_at FROM agent_messages ORDER BY id")
    assert [row[0] for row in rows] == ["s", "s"]
    assert all(row[1] for row in rows), "every row records when it was added"
    assert query(db_path, "SELECT session_id FROM agent_sessions") == [("s",)]


async def test_newer_schema_version_is_refused(db_path: str) -> None:
    execute(db_path, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    async with SQLiteSession("s", db_path) as session:
        with pytest.raises(SessionSchemaError, match="newer"):
            await session.add_items([user("a")])
        with pytest.raises(SessionSchemaError, match="newer"):
            await session.get_items()


async def test_foreign_table_with_our_name_is_refused(db_path: str) -> None:
    execute(db_path, "CREATE TABLE agent_messages (x INTEGER)")
    async with SQLiteSession("s", db_path) as session:
        with pytest.raises(SessionSchemaError, match="missing columns"):
            await session.add_items([user("a")])
    assert query(db_path, "PRAGMA user_version") == [(0,)]  # nothing was half-done


async def test_a_file_written_by_the_agents_sdk_is_adopted(db_path: str) -> None:
    sdk_memory = pytest.importorskip("agents.memory", reason="the SDK writes the file")
    peer = sdk_memory.SQLiteSession("shared", db_path)
    await peer.add_items([user("from the SDK")])
    async with SQLiteSession("shared", db_path) as ours:
        assert texts(await ours.get_items()) == ["from the SDK"]
        await ours.add_items([user("from turnstore")])
    assert texts(await peer.get_items()) == ["from the SDK", "from turnstore"]
    peer.close()
    assert query(db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


def test_limited_read_uses_the_index(db_path: str) -> None:
    async def create() -> None:
        async with SQLiteSession("s", db_path) as session:
            await session.get_items()

    asyncio.run(create())
    from turnstore.memory.sqlite.schema import SQLiteSchema

    schema = SQLiteSchema("agent_sessions", "agent_messages")
    plan = " | ".join(
        row[-1] for row in query(db_path, f"EXPLAIN QUERY PLAN {schema.select_latest}", "s", 9, 5)
    )
    assert "USING INDEX idx_agent_messages_session_id" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
    plan = " | ".join(
        row[-1] for row in query(db_path, f"EXPLAIN QUERY PLAN {schema.select_all}", "s")
    )
    assert "USING INDEX idx_agent_messages_session_id" in plan, plan
    assert "TEMP B-TREE" not in plan, plan


# --- reading ---------------------------------------------------------------------------------


async def test_session_settings_limit() -> None:
    async with SQLiteSession("s", session_settings=SessionSettings(limit=2)) as session:
        await session.add_items([user(str(i)) for i in range(5)])
        assert texts(await session.get_items()) == ["3", "4"]
        assert texts(await session.get_items(3)) == ["2", "3", "4"]


async def test_corrupt_rows_are_skipped_and_logged(
    db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user(str(i)) for i in range(10)])
        # Rows that are invalid alone but would join into valid JSON, a non-object, NULL-ish text,
        # and a run of corrupt rows at the newest end.
        bad = {2: '{"a":[1', 3: "2]}", 5: "42", 7: "", 8: "nope", 9: "{"}
        overwrite_rows(db_path, bad)
        with caplog.at_level(logging.WARNING, logger="turnstore.memory.sqlite"):
            assert texts(await session.get_items()) == ["0", "1", "4", "6"]
            assert texts(await session.get_items(3)) == ["1", "4", "6"]
            assert texts(await session.get_items(1)) == ["6"]
            assert texts(await session.get_items(100)) == ["0", "1", "4", "6"]
        assert "skipping row" in caplog.text
        assert texts([await session.pop_item()]) == ["6"]  # corrupt rows are left in place
        assert query(db_path, "SELECT count(*) FROM agent_messages") == [(9,)]


async def test_large_history_full_and_limited_reads(db_path: str) -> None:
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user(str(i)) for i in range(3000)])
        assert texts(await session.get_items()) == [str(i) for i in range(3000)]
        assert texts(await session.get_items(3)) == ["2997", "2998", "2999"]
        # A corrupt row in the middle chunk is skipped; the chunks around it stay whole.
        execute(db_path, "UPDATE agent_messages SET message_data = '[1' WHERE id = 1500")
        expected = [str(i) for i in range(3000) if i != 1499]
        assert texts(await session.get_items()) == expected
        assert texts(await session.get_items(1600)) == expected[-1600:]


@pytest.mark.parametrize(
    "spliced",
    [
        # Joined with bare commas: three objects.
        ['{"a":1},{"b":2}', '{"c":["', '"]}'],
        # Joined with any separator `,"<marker>",`: as many values, a string at every other place
        # (the first row's is not the marker), the last two rows taking one separator inside.
        ['{"a":1},"' + "0" * 32 + '",{"b":2}', '{"c":[1', "2]}"],
    ],
    ids=["commas", "a-false-marker"],
)
async def test_corrupt_rows_that_join_into_as_many_objects_are_skipped(
    db_path: str, caplog: pytest.LogCaptureFixture, spliced: list[str]
) -> None:
    # Three rows, each invalid alone, that joined read as three JSON objects: a read that decoded
    # a chunk as one array and only checked the count would return them.
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user(str(i)) for i in range(2500)])
        overwrite_rows(db_path, dict(enumerate(spliced, start=1200)))
        expected = [str(i) for i in range(2500) if not 1200 <= i < 1203]
        with caplog.at_level(logging.WARNING, logger="turnstore.memory.sqlite"):
            assert texts(await session.get_items()) == expected
            assert texts(await session.get_items(1400)) == expected[-1400:]
        assert caplog.text.count("skipping row") == 6


async def test_rows_that_are_not_text_in_a_chunk(
    db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A BLOB of UTF-8 JSON reads as its item; a number and a BLOB that is not UTF-8 are skipped;
    # the text rows around them still read.
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user(str(i)) for i in range(1500)])
        stored: dict[int, object] = {
            10: json.dumps(user("blob")).encode(),
            12: 7,
            1300: b"\xff{}",
        }
        overwrite_rows(db_path, stored)
        expected = [str(i) for i in range(1500) if i not in stored]
        expected[10:10] = ["blob"]
        with caplog.at_level(logging.WARNING, logger="turnstore.memory.sqlite"):
            assert texts(await session.get_items()) == expected
            assert texts(await session.get_items(1495)) == expected[-1495:]
        assert caplog.text.count("skipping row") == 4


# --- writing ---------------------------------------------------------------------------------


async def test_items_must_be_a_list_of_mappings() -> None:
    async with SQLiteSession("s") as session:
        with pytest.raises(TypeError, match="items must be a list"):
            await session.add_items({"role": "user"})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="items must be a list"):
            await session.add_items("abc")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"item 1 is not JSON-serialisable"):
            await session.add_items([user("a"), {"n": float("nan")}])
        with pytest.raises(TypeError, match=r"item 0 is a list, not a mapping"):
            await session.add_items([[1, 2]])  # type: ignore[list-item]
        assert await session.get_items() == []
        await session.add_items((user("tuple ok"),))  # type: ignore[arg-type]
        assert texts(await session.get_items()) == ["tuple ok"]


async def test_same_file_shares_history_across_objects_and_threads(db_path: str) -> None:
    first = SQLiteSession("shared", db_path)
    await first.add_items([user("main thread")])

    def other_thread() -> None:
        async def work() -> None:
            async with SQLiteSession("shared", db_path) as second:
                await second.add_items([user("other thread")])
                assert texts(await second.get_items()) == ["main thread", "other thread"]

        asyncio.run(work())

    thread = threading.Thread(target=other_thread)
    thread.start()
    await asyncio.to_thread(thread.join)
    assert texts(await first.get_items()) == ["main thread", "other thread"]
    await first.aclose()
    async with SQLiteSession("shared", db_path) as reopened:  # survives a "restart"
        assert texts(await reopened.get_items()) == ["main thread", "other thread"]


async def test_memory_databases_are_private_to_their_object() -> None:
    async with SQLiteSession("s") as first, SQLiteSession("s") as second:
        await first.add_items([user("a")])
        assert await second.get_items() == []


async def test_sessions_on_one_file_share_one_database(db_path: str, tmp_path: Path) -> None:
    async with (
        SQLiteSession("a", db_path) as a,
        SQLiteSession("b", db_path) as b,
        SQLiteSession("c", tmp_path / "other.db") as c,
    ):
        assert a._db is b._db
        assert a._db is not c._db


@pytest.fixture
def blocked_writer() -> Iterator[threading.Event]:
    release = threading.Event()
    yield release
    release.set()


async def _block_writer(session: SQLiteSession, release: threading.Event) -> asyncio.Task[Any]:
    entered = threading.Event()

    def block(conn: sqlite3.Connection) -> None:
        entered.set()
        release.wait(10)

    task = asyncio.ensure_future(session._write(block))
    await asyncio.to_thread(entered.wait, 10)
    return task


async def _wait_queued(session: SQLiteSession, n: int) -> None:
    while session._db._queue.qsize() < n:
        await asyncio.sleep(0.001)


async def test_a_failing_call_among_concurrent_ones_fails_alone(
    db_path: str, blocked_writer: threading.Event
) -> None:
    async with SQLiteSession("s", db_path) as session:
        await session.get_items()
        blocker = await _block_writer(session, blocked_writer)

        def half_then_fail(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('s', '{}')")
            conn.execute("SELECT * FROM no_such_table")

        good1 = asyncio.ensure_future(session.add_items([user("good 1")]))
        bad = asyncio.ensure_future(session._write(half_then_fail))
        good2 = asyncio.ensure_future(session.add_items([user("good 2")]))
        await _wait_queued(session, 3)
        blocked_writer.set()
        await asyncio.gather(blocker, good1, good2)
        with pytest.raises(SessionStorageError, match="no such table") as info:
            await bad
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)
        assert texts(await session.get_items()) == ["good 1", "good 2"]


async def test_a_refused_add_among_concurrent_adds_fails_alone(
    db_path: str, blocked_writer: threading.Event
) -> None:
    async with SQLiteSession("s", db_path) as session:
        await session.get_items()
        execute(
            db_path,
            "CREATE TRIGGER poison BEFORE INSERT ON agent_messages "
            "WHEN NEW.message_data LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poisoned'); END",
        )
        blocker = await _block_writer(session, blocked_writer)
        adds = [
            asyncio.ensure_future(session.add_items([user(text), user(text + "+")]))
            for text in ("ok 1", "poison", "ok 2", "ok 3")
        ]
        await _wait_queued(session, 4)
        blocked_writer.set()
        await blocker
        results = await asyncio.gather(*adds, return_exceptions=True)
        assert [results[0], results[2], results[3]] == [None, None, None]
        assert isinstance(results[1], SessionStorageError)
        assert "poisoned" in str(results[1])
        assert texts(await session.get_items()) == [
            "ok 1",
            "ok 1+",
            "ok 2",
            "ok 2+",
            "ok 3",
            "ok 3+",
        ]


async def test_a_busy_database_is_retried_not_reported(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnstore.memory.sqlite import database as sqlite_database

    monkeypatch.setattr(sqlite_database, "BUSY_TIMEOUT_MS", 20)  # SQLite gives up quickly...
    seen = trace_sqlite_calls(monkeypatch)
    async with SQLiteSession("s", db_path) as session:
        await session.get_items()
        other = sqlite3.connect(db_path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # ...while another process holds the write lock
        other.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('x', '{}')")
        met = asyncio.ensure_future(writer_meets_the_lock(seen))
        add = asyncio.ensure_future(session.add_items([user("waited")]))
        await met  # SQLite gave up at least once and the thread began the write again
        assert not add.done()
        other.execute("COMMIT")
        other.close()
        await add  # ...so the thread retried instead of failing
        assert texts(await session.get_items()) == ["waited"]


async def test_unopenable_file_is_a_storage_error(tmp_path: Path) -> None:
    async with SQLiteSession("s", tmp_path / "missing-dir" / "x.db") as session:
        with pytest.raises(SessionStorageError, match="unable to open"):
            await session.add_items([user("a")])


async def test_no_sqlite_call_runs_on_the_event_loop_thread(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = trace_sqlite_calls(monkeypatch)
    loop_thread = threading.get_ident()
    for path in (db_path, ":memory:"):
        session = SQLiteSession("s", path)
        await session.add_items([user("a"), user("b")])
        await asyncio.gather(*(session.add_items([user(str(i))]) for i in range(20)))
        await session.get_items()
        await session.get_items(2)
        await session.pop_item()
        snapshot = await session.snapshot_history()
        await session.replace_history(snapshot, [user("summary")])
        await session.get_archived_items()
        await session.clear_session()
        await session.aclose()
    assert any("INSERT" in sql for _, sql in seen)
    assert any(sql == "connect" for _, sql in seen)
    on_loop = [sql for thread, sql in seen if thread == loop_thread]
    assert on_loop == []


def _use_inherited_session(session: SQLiteSession, result: Any) -> None:
    async def work() -> list[str]:
        await session.add_items([user("from the child")])
        return texts(await session.get_items())

    result.put(asyncio.run(work()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
async def test_a_forked_child_gets_its_own_threads(db_path: str) -> None:
    import multiprocessing

    session = SQLiteSession("s", db_path)
    await session.add_items([user("from the parent")])  # the parent's threads are running
    context = multiprocessing.get_context("fork")
    result = context.SimpleQueue()
    child = context.Process(target=_use_inherited_session, args=(session, result))
    child.start()
    await asyncio.to_thread(child.join, 60)
    assert child.exitcode == 0
    assert result.get() == ["from the parent", "from the child"]
    result.close()
    assert texts(await session.get_items()) == ["from the parent", "from the child"]
    await session.aclose()


# --- close -----------------------------------------------------------------------------------


async def test_operations_after_close_raise(db_path: str) -> None:
    session = SQLiteSession("s", db_path)
    await session.add_items([user("a")])
    await session.aclose()
    await session.aclose()  # harmless
    for call in (
        session.get_items(),
        session.add_items([user("b")]),
        session.pop_item(),
        session.clear_session(),
        session.get_archived_items(),
    ):
        with pytest.raises(SessionClosedError, match="closed"):
            await call


async def test_close_lets_started_writes_finish_and_stops_threads(db_path: str) -> None:
    session = SQLiteSession("s", db_path)
    other = SQLiteSession("t", db_path)
    await session.get_items()
    db = session._db
    adds = [asyncio.ensure_future(session.add_items([user(str(i))])) for i in range(50)]
    await asyncio.sleep(0)
    await session.aclose()
    await asyncio.gather(*adds)
    assert len(await other.get_items()) == 0
    assert any(thread.is_alive() for thread in [db._thread])  # `other` still uses them
    await other.aclose()
    assert not any(thread.is_alive() for thread in [db._thread])
    assert query(db_path, "SELECT count(*) FROM agent_messages") == [(50,)]
    async with SQLiteSession("s", db_path) as reopened:
        assert len(await reopened.get_items()) == 50


async def test_async_with_closes() -> None:
    async with SQLiteSession("s") as session:
        await session.add_items([user("a")])
    with pytest.raises(SessionClosedError):
        await session.get_items()


@pytest.mark.slow
def test_only_the_forgotten_session_warns_and_the_process_exits_cleanly(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = f"""
import asyncio, gc
from turnstore import SQLiteSession

async def main():
    async with SQLiteSession("s", {str(tmp_path / "w.db")!r}) as s:
        await s.add_items([{{"role": "user", "content": "a"}}])
        await s.get_items()
    m = SQLiteSession("m")
    await m.add_items([{{"role": "user", "content": "a"}}])
    await m.aclose()
    forgotten = SQLiteSession("f")
    await forgotten.add_items([{{"role": "user", "content": "a"}}])
    del forgotten

asyncio.run(main(), debug=False)  # -X dev would log slow steps on a busy machine
gc.collect()
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "always", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    warned = [line for line in result.stderr.splitlines() if "Warning" in line]
    assert len(warned) == 1, result.stderr
    assert "ResourceWarning: SQLiteSession 'f' on ':memory:' was never closed" in warned[0]


# --- storage format ----------------------------------------------------------------------------


async def test_stored_json_is_compact_utf8(db_path: str) -> None:
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user("héllo 🎉")])
    (data,) = query(db_path, "SELECT message_data FROM agent_messages")[0]
    assert data == json.dumps(user("héllo 🎉"), ensure_ascii=False, separators=(",", ":"))
