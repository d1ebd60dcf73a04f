"""Raw access to a SQLite session file, for the conformance hooks of the SQLite sessions."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import pytest


def corrupt_newest_row(db_path: str, session_id: str) -> None:
    """Overwrite the session's newest stored row with text that is not JSON."""
    conn = sqlite3.connect(db_path)
    try:
        with conn:
            conn.execute(
                "UPDATE agent_messages SET message_data = 'not json{' WHERE id = "
                "(SELECT max(id) FROM agent_messages WHERE session_id = ?)",
                (session_id,),
            )
    finally:
        conn.close()


def count_rows(db_path: str, session_id: str) -> int:
    """How many rows the messages table holds for the session (corrupt ones included)."""
    conn = sqlite3.connect(db_path)
    try:
        query = "SELECT count(*) FROM agent_messages WHERE session_id = ?"
        return int(conn.execute(query, (session_id,)).fetchone()[0])
    finally:
        conn.close()


def trace_sqlite_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    """Record, from now until the test ends, each SQLite connect and statement with its thread.

    Returns:
        The list the calls are appended to: `(thread id, "connect" or the SQL text)`.
    """
    seen: list[tuple[int, str]] = []
    real_connect = sqlite3.connect

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        seen.append((threading.get_ident(), "connect"))
        conn = real_connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: seen.append((threading.get_ident(), sql)))
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    return seen


async def writer_meets_the_lock(seen: list[tuple[int, str]]) -> None:
    """Wait until a traced connection began a write transaction twice from now on.

    The writer retries a transaction that found the file locked, so a second `BEGIN IMMEDIATE`
    shows it met another connection's lock. `seen` comes from `trace_sqlite_calls`.
    """
    from support.waiting import eventually

    since = len(seen)

    def retried() -> bool:
        return sum(sql == "BEGIN IMMEDIATE" for _, sql in seen[since:]) >= 2

    await eventually(retried, "the writer to retry against the lock")
