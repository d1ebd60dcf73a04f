"""How `SQLiteSession` reads a history fast: run on a reader thread, never on the event loop.

A whole history is read chunk by chunk, rows as stored (SQLite checks each is valid JSON), joined
in Python into one JSON array per batch and decoded with one `json.loads` call (no thread touches
the `gc` module); a limited read walks the `(session_id, id)` index
backwards so its cost follows the limit, not the history. Corrupt rows are skipped with a
logged warning (by `codec.decode_item`); `limit` counts valid items only.

SQLite's per-row validity flag is what makes joining sound: rows that are each invalid can join
into an array of exactly as many objects (`{"a":1},{"b":2}`, `{"c":["`, `"]}`), so a successful
decode of the joined text proves nothing about each row. A full read costs about one `json.loads`
of the whole history; most of that is the garbage collector scanning the new items, which no
library thread may pause.
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

_JOIN_CHARS = 8_000_000
"""The most characters joined into one `json.loads` call (larger rows are decoded alone)."""


def decode_checked(rows: list[Any], session_id: str) -> list[Any]:
    """Decode (id, message_data, valid) rows, oldest first, skipping corrupt ones.

    Consecutive rows that SQLite found to be valid JSON are joined (up to `_CHUNK_ROWS` rows and
    `_JOIN_CHARS` characters) into one JSON array and decoded with one `json.loads` call; a batch
    holding an invalid row, or whose result is not one object per row, is decoded row by row
    (by `codec.decode_item`, which logs and skips a corrupt row).
    """
    # The common case, one chunk of valid rows, is checked column-wise in C (no per-row Python).
    if 1 < len(rows) <= _CHUNK_ROWS:
        _, texts, valids = zip(*rows, strict=True)
        if valids.count(1) == len(valids) and sum(map(len, texts)) <= _JOIN_CHARS:
            decoded = _decode_array(texts)
            if decoded is not None:
                return decoded
    items: list[Any] = []
    start = 0
    while start < len(rows):
        end, size = start, 0
        while end < len(rows) and end - start < _CHUNK_ROWS:
            data = rows[end][1]
            size += len(data) if isinstance(data, str) else _JOIN_CHARS
            if end > start and size > _JOIN_CHARS:
                break
            end += 1
        chunk = rows[start:end]
        start = end
        if all(valid == 1 for _, _, valid in chunk):
            decoded = _decode_array([data for _, data, _ in chunk])
            if decoded is not None:
                items += decoded
                continue
        for row_id, data, _ in chunk:
            item = decode_item(data, where=f"row {row_id} of session {session_id!r}")
            if item is not None:
                items.append(item)
    return items


def _decode_array(texts: Sequence[str]) -> list[Any] | None:
    """One object per JSON text, decoded with one `json.loads` call, or `None` if any is not."""
    try:
        if len(texts) == 1:
            decoded = [json.loads(texts[0])]
        else:
            decoded = json.loads("[" + ",".join(texts) + "]")
    except (TypeError, ValueError, RecursionError):
        return None
    if type(decoded) is not list or len(decoded) != len(texts) or set(map(type, decoded)) != {dict}:
        return None  # `texts` is never empty: an empty list would fail this check
    return decoded
