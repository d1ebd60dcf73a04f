"""How `SQLiteSession` reads a history fast: run on a reader thread, never on the event loop.

A whole history is read chunk by chunk, each chunk folded by SQLite into one JSON array that
Python decodes with one `json.loads` call; a limited read walks the `(session_id, id)` index
backwards so its cost follows the limit, not the history. Corrupt rows are skipped with a
logged warning (by `codec.decode_item`); `limit` counts valid items only.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from ..codec import MAX_LIMIT, decode_item
from .schema import SQLiteSchema

__all__ = ["read_all", "read_latest"]


def read_all(conn: sqlite3.Connection, schema: SQLiteSchema, session_id: str) -> list[Any]:
    """Every valid item of a session, oldest first."""
    # Chunk by chunk, SQLite folds the rows into one JSON array (and checks each row is valid
    # JSON), so Python decodes one string per chunk. The ids come back folded the same way, which
    # proves the chunk is in order; any doubt falls back to row-by-row decoding of that chunk.
    items: list[Any] = []
    after = -1
    with _gc_paused():
        while True:
            count, valid, ids_json, joined = conn.execute(
                schema.select_chunk, (session_id, after, _CHUNK_ROWS)
            ).fetchone()
            if not count:
                break
            ids: list[int] = json.loads(ids_json)
            decoded = None
            if valid == count and isinstance(joined, str) and _ascending(ids):
                with contextlib.suppress(TypeError, ValueError, RecursionError):
                    decoded = json.loads(joined)
            if (
                type(decoded) is list
                and len(decoded) == count
                and all(type(item) is dict for item in decoded)
            ):
                items += decoded
            else:
                last = max(ids)
                rows = conn.execute(schema.select_range, (session_id, after, last)).fetchall()
                items += _decode_checked(rows, session_id)
            if count < _CHUNK_ROWS:
                break
            after = max(ids)
    return items


def _ascending(ids: list[int]) -> bool:
    return ids == sorted(ids)  # ids are unique: sorted means strictly ascending


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
        chunk = _decode_checked(rows, session_id)
        chunks.append(chunk)
        found += len(chunk)
        if len(rows) < want:
            break
        before = rows[0][0]
    chunks.reverse()
    return [item for chunk in chunks for item in chunk]


_CHUNK_ROWS = 1000
"""Rows decoded by one `json.loads` call: large enough to be fast, small enough that the event
loop thread gets the GIL back between chunks."""


def _decode_checked(rows: list[Any], session_id: str) -> list[Any]:
    """Decode (id, message_data, valid) rows, oldest first, skipping corrupt ones.

    Rows that SQLite found to be valid JSON are joined into one JSON array per chunk and decoded
    with one `json.loads` call; a chunk holding an invalid row, or whose result is not one object
    per row, is decoded row by row instead.
    """
    items: list[Any] = []
    with _gc_paused() if len(rows) >= _CHUNK_ROWS else contextlib.nullcontext():
        for start in range(0, len(rows), _CHUNK_ROWS):
            chunk = rows[start : start + _CHUNK_ROWS]
            if all(valid == 1 for _, _, valid in chunk):
                try:
                    decoded = json.loads("[" + ",".join([data for _, data, _ in chunk]) + "]")
                except (TypeError, ValueError, RecursionError):
                    decoded = None
                if (
                    type(decoded) is list
                    and len(decoded) == len(chunk)
                    and all(type(item) is dict for item in decoded)
                ):
                    items += decoded
                    continue
            for row_id, data, _ in chunk:
                item = decode_item(data, where=f"row {row_id} of session {session_id!r}")
                if item is not None:
                    items.append(item)
    return items


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large history is decoded.

    Decoding creates hundreds of thousands of fresh dicts and lists, none of them garbage; with the
    collector running, its repeated passes over them cost several times the decoding itself
    (measured: 0.59 s against 0.13 s for 100,000 items). The pause lasts one decode and is undone
    even on error; it is skipped when the collector is already disabled.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
