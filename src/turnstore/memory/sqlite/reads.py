"""How `SQLiteSession` reads a history: on the database thread, never on the event loop.

A whole history is read a chunk of rows at a time (the event loop thread gets the GIL back
between chunks), each row decoded by `codec.decode_item`; a limited read walks the
`(session_id, id)` index backwards so its cost follows the limit, not the history. Corrupt rows
are skipped with a logged warning; `limit` counts valid items only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ..codec import MAX_LIMIT, decode_item
from .schema import SQLiteSchema

__all__ = ["decode_checked", "read_all", "read_latest"]


def read_all(conn: sqlite3.Connection, schema: SQLiteSchema, session_id: str) -> list[Any]:
    """Every valid item of a session, oldest first."""
    # Rows come back as they are stored, a chunk at a time, and are joined in Python: SQLite never
    # concatenates them (its `group_concat` fails with "string or blob too big" once a session
    # holds about 1 GB, whatever the size of each row).
    items: list[Any] = []
    after = -1
    while True:
        rows = conn.execute(schema.select_chunk, (session_id, after, _CHUNK_ROWS)).fetchall()
        if not rows:
            break
        items += decode_checked(rows, session_id)
        if len(rows) < _CHUNK_ROWS:
            break
        after = rows[-1][0]
    return items


def read_latest(
    conn: sqlite3.Connection, schema: SQLiteSchema, session_id: str, limit: int
) -> list[Any]:
    """The latest `limit` valid items of a session, oldest first."""
    # Newest first through the (session_id, id) index, so the cost follows `limit`, not the
    # history; when corrupt rows were skipped, fetch further back until `limit` valid items.
    chunks: list[list[Any]] = []
    found = 0
    before = MAX_LIMIT
    while found < limit:
        want = limit - found
        rows = conn.execute(schema.select_latest, (session_id, before, want)).fetchall()
        if not rows:
            break
        rows.reverse()
        chunk = decode_checked(rows, session_id)
        chunks.append(chunk)
        found += len(chunk)
        if len(rows) < want:
            break
        before = rows[0][0]
    chunks.reverse()
    return [item for chunk in chunks for item in chunk]


_CHUNK_ROWS = 1000
"""Rows read and decoded at a time: large enough to be fast, small enough that the event loop
thread gets the GIL back between chunks."""


def decode_checked(rows: Sequence[Sequence[Any]], session_id: str) -> list[Any]:
    """Decode (id, message_data, ...) rows, oldest first, skipping (and logging) corrupt ones."""
    items: list[Any] = []
    for row in rows:
        try:
            item = _decode(row[1])
        except (TypeError, ValueError, RecursionError):
            item = None
        if type(item) is not dict:  # bytes, or corrupt: `decode_item` decodes or says why
            item = decode_item(row[1], where=f"row {row[0]} of session {session_id!r}")
            if item is None:
                continue
        items.append(item)
    return items


_decode = json.JSONDecoder().decode
