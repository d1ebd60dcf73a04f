"""The one item codec every backend uses: validate, encode, decode, limits and table names.

Rules, each in one function:

- **Items** ([`encode_items`][turnstore.memory.codec.encode_items]): a batch is a list (or other
  sequence, not a string or mapping) of mappings, encoded as compact UTF-8 JSON. Every item of a
  batch is encoded, and so validated, before anything is written. An item that is not a mapping,
  not JSON-serialisable, nested more than `MAX_ITEM_DEPTH` levels deep, holding a float that is
  not a JSON number (`NaN`, `Infinity`: strict JSON has no such values, PostgreSQL and the OpenAI
  API reject them) or text that cannot be stored as UTF-8 (a lone surrogate) raises `TypeError`
  naming its index.
- **Stored rows** ([`decode_item`][turnstore.memory.codec.decode_item],
  [`decode_rows`][turnstore.memory.codec.decode_rows]): a row that is not a JSON object is
  reported as `None` / skipped with a logged warning, so that reads skip it and never fail.
- **Limits** ([`check_limit`][turnstore.memory.codec.check_limit]): an int >= 0 or `None`.
- **Session ids** ([`check_session_id`][turnstore.memory.codec.check_session_id]).
- **Table names** ([`validate_table_names`][turnstore.memory.codec.validate_table_names]): the
  same rule on every SQL backend (see `MAX_TABLE_NAME_LENGTH`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .session import HistorySnapshot

if TYPE_CHECKING:
    from ..items import TResponseInputItem

__all__ = [
    "MAX_ITEM_DEPTH",
    "MAX_LIMIT",
    "MAX_TABLE_NAME_LENGTH",
    "WHOLE_HISTORY",
    "check_limit",
    "check_session_id",
    "decode_item",
    "decode_rows",
    "decode_snapshot",
    "encode_items",
    "validate_table_name",
    "validate_table_names",
]

logger = logging.getLogger(__name__)

MAX_ITEM_DEPTH = 256
"""The deepest nesting of objects and arrays an item may have (the item itself is level 1).

A fixed bound, not Python's recursion limit: how deep the JSON encoder and decoder can go depends
on how deep the calling code's stack already is, and reads run deeper than writes (and on other
threads). An item accepted at write time must decode at read time, or it would be skipped as
corrupt; this bound leaves the decoder hundreds of frames to spare.
"""

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_decode = json.JSONDecoder().decode


def encode_items(items: object) -> list[str]:
    """Encode a batch of items as compact JSON text, validating every item first.

    Args:
        items: The items to store: a list (or tuple) of mappings.

    Returns:
        One JSON text per item, in order.

    Raises:
        TypeError: `items` is not a list (or other sequence), or an item is not a mapping, is not
            JSON-serialisable (`NaN` and `Infinity` included), is nested more than
            `MAX_ITEM_DEPTH` levels deep, or holds text that cannot be stored as UTF-8. The
            message names the item's index; nothing has been written.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise TypeError(f"items must be a list of item dicts, not {type(items).__name__}")
    encoded: list[str] = []
    for index, item in enumerate(items):
        encoded.append(_encode_item(index, item))
    return encoded


def _encode_item(index: int, item: object) -> str:
    if not isinstance(item, Mapping):
        raise TypeError(
            f"item {index} is not a mapping: item {index} is a {type(item).__name__}, not a "
            "mapping (a Responses input item dict)"
        )
    try:
        text = _encoder.encode(item if isinstance(item, dict) else dict(item))
        text.encode("utf-8")  # a lone surrogate cannot be stored
    except RecursionError as exc:
        raise TypeError(
            f"item {index} is not JSON-serialisable: it is nested too deeply to encode ({exc})"
        ) from exc
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError and NaN are ValueErrors
        raise TypeError(f"item {index} is not JSON-serialisable: {exc}") from exc
    # Each level opens a bracket: text with few brackets cannot be too deep (a 40 MB data URL
    # is counted at C speed and never walked).
    if text.count("[") + text.count("{") > MAX_ITEM_DEPTH and _too_deep(item):
        raise TypeError(
            f"item {index} is not JSON-serialisable: it is nested more than {MAX_ITEM_DEPTH} "
            "levels deep"
        )
    return text


def _too_deep(item: object) -> bool:
    """Tell whether `item` (already encoded, so finite and acyclic) nests past `MAX_ITEM_DEPTH`."""
    stack: list[tuple[object, int]] = [(item, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, Mapping) else value
        for child in children:  # type: ignore[attr-defined]
            if isinstance(child, Mapping | list | tuple):
                if depth == MAX_ITEM_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False


def decode_item(raw: object, *, where: str) -> TResponseInputItem | None:
    """Decode one stored item, or log a warning and return `None` when it is corrupt.

    Args:
        raw: The stored JSON text (str or UTF-8 bytes).
        where: Names the row in the warning, for example `"row 17 of session 'a'"`.

    Returns:
        The item, or `None` when the text is not a JSON object.
    """
    try:
        value = _decode(raw.decode("utf-8") if isinstance(raw, bytes) else cast(str, raw))
    except (ValueError, TypeError, RecursionError) as exc:  # UnicodeDecodeError: ValueError
        logger.warning("skipping %s: a corrupt stored item, not valid JSON (%s)", where, exc)
        return None
    if not isinstance(value, dict):
        logger.warning(
            "skipping %s: a corrupt stored item, a JSON %s instead of an object",
            where,
            type(value).__name__,
        )
        return None
    return cast("TResponseInputItem", value)


def decode_rows(rows: Iterable[tuple[Any, Any]], where: str) -> list[TResponseInputItem]:
    """Decode `(row id, JSON text)` rows, skipping corrupt ones with a logged warning.

    Args:
        rows: The stored rows, in the order to return them.
        where: Names the session in warnings, for example `"session 'a'"`.

    Returns:
        The valid items, in order.
    """
    items: list[TResponseInputItem] = []
    append = items.append
    for row_id, data in rows:
        try:
            value = _decode(data)
            if type(value) is dict:
                append(value)  # type: ignore[arg-type]
                continue
        except (ValueError, TypeError, RecursionError):
            pass
        decode_item(data, where=f"row {row_id} of {where}")  # logs why it is corrupt
    return items


def decode_snapshot(rows: Iterable[tuple[Any, Any]], where: str) -> HistorySnapshot:
    """Decode `(row id, JSON text)` rows, oldest first, into a snapshot of the history.

    Args:
        rows: Every stored row of the session, oldest first.
        where: Names the session in warnings, for example `"session 'a'"`.

    Returns:
        A snapshot whose `rows` are the row ids (corrupt rows included) and whose `items` are
        the valid items.
    """
    return HistorySnapshot.of_rows(
        [(row_id, decode_item(data, where=f"row {row_id} of {where}")) for row_id, data in rows]
    )


def check_session_id(session_id: object, *, nul_allowed: bool = True) -> str:
    """Check that a session id can be stored, so a bad id fails in the constructor.

    Args:
        session_id: The proposed id.
        nul_allowed: False for storage that cannot hold a NUL character (PostgreSQL text).

    Returns:
        `session_id`, unchanged.

    Raises:
        TypeError: The id is not a `str`.
        ValueError: The id holds a lone surrogate (not encodable as UTF-8), or a NUL character
            where `nul_allowed` is False.
    """
    if not isinstance(session_id, str):
        raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"session_id {session_id!r} cannot be stored: it is not valid UTF-8 text "
            f"({exc.reason} at position {exc.start})"
        ) from exc
    if not nul_allowed and "\x00" in session_id:
        raise ValueError(
            f"session_id {session_id!r} cannot be stored: PostgreSQL text cannot hold a NUL "
            "character"
        )
    return session_id


MAX_LIMIT = 2**63 - 1
"""The largest limit passed to a database: a signed 64-bit integer, more items than any
session holds, so a larger limit means the same as this one."""

WHOLE_HISTORY = MAX_LIMIT
"""The limit a wrapper reads a whole history with (compaction, `EncryptedSession`): explicit,
so that the wrapped session's settings (its `limit`) cannot cut the read short, and larger
than any history."""


def check_limit(limit: object) -> int | None:
    """Validate a resolved history limit.

    Args:
        limit: The limit a read will use.

    Returns:
        `limit`, capped at `MAX_LIMIT` (no session holds more items; databases reject larger
        integers), or `None`.

    Raises:
        TypeError: `limit` is not an int or None.
        ValueError: `limit` is negative.
    """
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int or None, not {type(limit).__name__}")
    if limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    return min(limit, MAX_LIMIT)


MAX_TABLE_NAME_LENGTH = 48
"""The longest table name any backend accepts, in UTF-8 bytes. The SQL backends derive more names
from it (`idx_<name>_session_id`, `<name>_archive`): with 48 bytes the longest derived name is 63,
which fits PostgreSQL's 63-byte and MySQL's 64-character identifier limits, so one table layout
works on every backend (and `turnstore import` can copy between them)."""

_TABLE_NAME = re.compile(r"[^\W\d]\w*")
"""A plain identifier: a letter (any script) or underscore, then letters, digits, underscores."""


def validate_table_name(name: object, argument: str) -> str:
    """Check a table name and return the table it names, the same rule on every backend.

    A name is a plain identifier (letters of any script, digits and underscores, not starting
    with a digit), given bare (`chat_sessions`, `ßsessions`) or SQL-quoted (`'"chat_sessions"'`,
    as the OpenAI Agents SDK accepts it): both name the same table, and the name inside the
    quotes is returned. Every backend quotes the names it is given in its SQL.

    Args:
        name: The proposed table name.
        argument: The argument it came from, for the error message.

    Returns:
        The table's name, without the SQL quotes it may have been given in.

    Raises:
        TypeError: `name` is not a string.
        ValueError: `name` (inside its quotes) is not a plain identifier of 1 to 48 UTF-8
            bytes, or starts with SQLite's reserved `sqlite_` prefix.
    """
    if not isinstance(name, str):
        raise TypeError(f"{argument} must be a str, not {type(name).__name__}")
    table = name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else name
    if (
        not _TABLE_NAME.fullmatch(table)
        or len(table.encode("utf-8")) > MAX_TABLE_NAME_LENGTH
        or _ascii_fold(table).startswith("sqlite_")
    ):
        raise ValueError(
            f"{argument}={name!r} is not a plain SQL identifier: a plain identifier is 1-"
            f"{MAX_TABLE_NAME_LENGTH} bytes (UTF-8) of letters, digits and underscores, not "
            "starting with a digit (nor with 'sqlite_'), bare or in double quotes"
        )
    return table


def _ascii_fold(name: str) -> str:
    """`name` with ASCII letters lower-cased: how SQLite compares identifiers (not `str.lower`)."""
    return name.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def validate_table_names(sessions_table: object, messages_table: object) -> tuple[str, str]:
    """Check a (sessions table, messages table) pair: two valid names for different tables.

    Table names are compared ignoring the case of ASCII letters (as SQLite does), and the sessions
    table may not take the name of the messages table's archive (`<messages_table>_archive`).

    Args:
        sessions_table: The proposed name of the table of sessions.
        messages_table: The proposed name of the table of items.

    Returns:
        The two table names (see `validate_table_name`: SQL quotes removed).

    Raises:
        TypeError: A name is not a string.
        ValueError: A name is not a plain identifier (see `validate_table_name`), or both name
            the same table.
    """
    sessions = validate_table_name(sessions_table, "sessions_table")
    messages = validate_table_name(messages_table, "messages_table")
    if _ascii_fold(sessions) in (_ascii_fold(messages), _ascii_fold(f"{messages}_archive")):
        raise ValueError(
            "sessions_table and messages_table must differ (they must name different tables), "
            f"got {sessions!r} and {messages!r}"
        )
    return sessions, messages
