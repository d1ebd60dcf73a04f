"""How `SQLiteSession` reads a history fast: run on a reader thread, never on the event loop.

A whole history is read chunk by chunk, rows as stored, joined in Python into one JSON array per
batch and decoded with one `json.loads` call (no thread touches the `gc` module); a limited read
walks the `(session_id, id)` index backwards so its cost follows the limit, not the history.
Corrupt rows are skipped with a logged warning (by `codec.decode_item`); `limit` counts valid
items only.

A successful decode of rows joined with bare commas proves nothing about each row: rows that are
each invalid can join into an array of exactly as many objects (`{"a":1},{"b":2}`, `{"c":["`,
`"]}`). So a batch is joined with the separator `,"<marker>",`, its marker 32 hex digits drawn
at random once the rows are read, and the decoded array must hold the marker at every odd place
(and a dict at every even one). A JSON string equal to the marker can only be a separator's own
`"<marker>"`: a string reaching into a separator from a row holds its comma, and any other
spelling of the marker (escapes included) would be in a row, which cannot know it. So every
separator was read as an element of the outer array, and the text between two of them, one row,
is exactly one JSON value. This replaces SQLite's per-row `json_valid` flag, a second parse of
every row in C that cost more than the markers do: a full read of 100,000 items, measured against
its floor (one `json.loads` of the whole history), went from 1.11 to 0.98 times it for small
items and from 1.35 to 1.12 for nested ones (process CPU, medians of rounds alternating in one
process). A batch that fails to decode, or is not one object per row, is decoded row by row.
Most of a full read is the garbage collector scanning the new items, which no library thread may
pause; most of the rest is fetching the rows.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Sequence
from operator import itemgetter
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


def decode_checked(rows: Sequence[Sequence[Any]], session_id: str) -> list[Any]:
    """Decode (id, message_data, ...) rows, oldest first, skipping corrupt ones.

    Rows are joined (up to `_CHUNK_ROWS` rows and `_JOIN_CHARS` characters) into one JSON array
    decoded with one `json.loads` call, each row proven to be one JSON object by the markers
    between them (see the module docstring); a batch that fails is decoded row by row (by
    `codec.decode_item`, which logs and skips a corrupt row). Further columns are ignored.
    """
    # The common case, one chunk of text rows, is checked column-wise in C (no per-row Python).
    if 1 < len(rows) <= _CHUNK_ROWS:
        texts = list(map(itemgetter(1), rows))
        try:
            size = sum(map(len, texts))
        except TypeError:  # a NULL or a number: decoded row by row below
            size = _JOIN_CHARS + 1
        if size <= _JOIN_CHARS:
            decoded = _decode_array(texts)
            # The chunking below would join these very rows again: decode them one by one.
            return decoded if decoded is not None else _decode_rows(rows, session_id)
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
        decoded = _decode_array([row[1] for row in chunk])
        items += decoded if decoded is not None else _decode_rows(chunk, session_id)
    return items


def _decode_rows(rows: Sequence[Sequence[Any]], session_id: str) -> list[Any]:
    """Decode (id, message_data, ...) rows one by one, skipping (and logging) corrupt ones."""
    items: list[Any] = []
    for row in rows:
        item = decode_item(row[1], where=f"row {row[0]} of session {session_id!r}")
        if item is not None:
            items.append(item)
    return items


def _decode_array(texts: Sequence[object]) -> list[Any] | None:
    """One object per JSON text, decoded with one `json.loads` call, or `None` if any is not."""
    try:
        if len(texts) == 1:
            if type(texts[0]) is not str:
                return None  # bytes, NULL, a number: left to `codec.decode_item`
            decoded = [_decode(texts[0])]
        else:
            # A separator `,"<marker>",` between rows (`join` refuses any row that is not str).
            marker = secrets.token_hex(16)
            joined = _decode("[" + f',"{marker}",'.join(texts) + "]")  # type: ignore[arg-type]
            if (
                type(joined) is not list
                or len(joined) != 2 * len(texts) - 1
                or joined[1::2].count(marker) != len(texts) - 1
            ):
                return None  # some row is not exactly one JSON value
            decoded = joined[::2]
    except (TypeError, ValueError, RecursionError):
        return None
    if set(map(type, decoded)) != {dict}:
        return None  # `texts` is never empty: an empty list would fail this check
    return decoded


_decode = json.JSONDecoder().decode
