"""A SQLite file written by the previous release (0.1.0, published as agent-sessions) still opens.

The file is built with raw SQL: the statements below are the ones that release ran (its
`agent_sessions/memory/sqlite_schema.py`, default table names), so this test does not depend on
today's schema code. Opening it with today's `SQLiteSession`, `open_session_store` and the
`turnstore` command must read every item in order, keep writing to the same tables, and leave
the rows it did not touch as they were.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from turnstore import SQLiteSession
from turnstore.admin import open_session_store

# As the 0.1.0 release created them (identifiers quoted, version 1 recorded).
PREVIOUS_RELEASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS "agent_sessions" (session_id TEXT PRIMARY KEY,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE IF NOT EXISTS "agent_messages" (id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL, message_data TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (session_id) REFERENCES "agent_sessions" (session_id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS "agent_messages_archive" (id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL, message_data TEXT NOT NULL, created_at TIMESTAMP,
    archived_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE INDEX IF NOT EXISTS "idx_agent_messages_session_id" ON "agent_messages" (session_id, id);
CREATE INDEX IF NOT EXISTS "idx_agent_messages_archive_session_id"
    ON "agent_messages_archive" (session_id, id);
PRAGMA user_version = 1;
"""

ITEMS = {
    "user_42": [
        {"role": "user", "content": "What city is the Golden Gate Bridge in?"},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "San Francisco", "annotations": []}],
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "héllo 你好"},
    ],
    "other": [{"role": "user", "content": "unrelated"}],
}


def write_previous_release_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(PREVIOUS_RELEASE_SCHEMA)
        with conn:
            for session_id, items in ITEMS.items():
                conn.execute("INSERT INTO agent_sessions (session_id) VALUES (?)", (session_id,))
                conn.executemany(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                    [(session_id, json.dumps(item)) for item in items],
                )
            conn.execute(
                "INSERT INTO agent_messages_archive (session_id, message_data, created_at) "
                "VALUES ('user_42', ?, '2026-11-01 10:00:00')",
                (json.dumps({"role": "user", "content": "archived by a compaction"}),),
            )
    finally:
        conn.close()


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def test_sessions_read_and_extend_a_previous_release_file(tmp_path: Path) -> None:
    db = tmp_path / "written_by_0.1.0.db"
    write_previous_release_file(db)
    tables_before = rows(db, "SELECT type, name FROM sqlite_master ORDER BY name")

    async with SQLiteSession("user_42", db) as session:
        assert await session.get_items() == ITEMS["user_42"]
        assert await session.get_items(1) == ITEMS["user_42"][-1:]
        assert await session.get_archived_items() == [
            {"role": "user", "content": "archived by a compaction"}
        ]
        await session.add_items([{"role": "user", "content": "What state is it in?"}])
        assert (await session.get_items())[-1] == {
            "role": "user",
            "content": "What state is it in?",
        }
    async with SQLiteSession("other", db) as other:
        assert await other.get_items() == ITEMS["other"]

    # Same tables and indexes, same schema version: nothing renamed, nothing added.
    assert rows(db, "SELECT type, name FROM sqlite_master ORDER BY name") == tables_before
    assert rows(db, "PRAGMA user_version") == [(1,)]
    assert rows(db, "SELECT count(*) FROM agent_messages WHERE session_id = 'user_42'") == [(5,)]

    async with open_session_store(db) as store:
        listed = {info.session_id: info.item_count for info in await store.list_sessions()}
    assert listed == {"user_42": 5, "other": 1}


def test_the_cli_reads_a_previous_release_file(tmp_path: Path) -> None:
    db = tmp_path / "written_by_0.1.0.db"
    write_previous_release_file(db)
    script = Path(sys.executable).with_name("turnstore")
    done = subprocess.run(
        [str(script), "--db", str(db), "show", "user_42"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == ITEMS["user_42"]


async def test_prune_reads_whole_second_stamps_of_a_previous_release_file(tmp_path: Path) -> None:
    # The previous release (and the OpenAI Agents SDK) stored last activity to the second
    # (CURRENT_TIMESTAMP). Such a stamp may stand for any moment of its second: it is idle only
    # when its whole second is before the cutoff. New writes are stored to the millisecond.
    db = tmp_path / "written_by_0.1.0.db"
    write_previous_release_file(db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE agent_sessions SET updated_at = '2020-01-01 00:00:00' "
            "WHERE session_id = 'other'"
        )
    conn.close()
    [(stamp,)] = rows(db, "SELECT updated_at FROM agent_sessions WHERE session_id = 'user_42'")
    assert len(str(stamp)) == 19  # whole seconds, as the previous release wrote it
    written = datetime.fromisoformat(str(stamp)).replace(tzinfo=UTC)
    while datetime.now(UTC) < written + timedelta(seconds=1):  # the cutoff below is in the past
        await asyncio.sleep(0.05)

    async with open_session_store(db) as store:
        # A cutoff inside user_42's second: it may have been written after it, so it stays.
        inside = datetime.now(UTC) - (written + timedelta(milliseconds=500))
        assert await store.delete_idle_sessions(inside) == 1  # only 'other', from 2020
        assert await store.get_info("user_42") is not None
        async with SQLiteSession("user_42", db) as session:
            await session.add_items([{"role": "user", "content": "later"}])
        [(stamp,)] = rows(db, "SELECT updated_at FROM agent_sessions WHERE session_id = 'user_42'")
        assert len(str(stamp)) == 23  # milliseconds from now on
        later = datetime.fromisoformat(str(stamp)).replace(tzinfo=UTC)
        while datetime.now(UTC) < later + timedelta(milliseconds=1):  # a cutoff after that ms
            await asyncio.sleep(0.001)
        # A cutoff after the whole second (and after the new write) deletes it.
        assert await store.delete_idle_sessions(0) == 1
        assert await store.list_sessions() == []
