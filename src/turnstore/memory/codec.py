"""Encoding items to JSON text and back, shared by the server backends.

Every item of a batch is encoded (and so validated) before anything is written; a stored row that
cannot be decoded is reported to the caller as `None` so that reads can skip it with a warning.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from ..items import TResponseInputItem

__all__ = ["check_limit", "decode_item", "decode_rows", "encode_items", "logger"]

logger = logging.getLogger("turnstore.memory")

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_decode = json.JSONDecoder().decode


def encode_items(items: Sequence[Any]) -> list[str]:
    """Encode a batch of items as compact JSON text, validating every item first.

    Args:
        items: The items to store.

    Returns:
        One JSON text per item, in order.

    Raises:
        TypeError: `items` is not a list (or other sequence), or an item is not a mapping, is not
            JSON-serialisable (NaN and infinities included), is nested too deeply to encode, or
            holds text that cannot be stored as UTF-8. The message names the item's index;
            nothing has been written.
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise TypeError(f"items must be a list of items, not {type(items).__name__}")
    encoded: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(
                f"item {index} is not a mapping (a Responses input item dict): "
                f"got {type(item).__name__}"
            )
        try:
            text = _encoder.encode(item)
            text.encode("utf-8")
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            raise TypeError(f"item {index} is not JSON-serialisable: {exc}") from exc
        except RecursionError as exc:
            raise TypeError(
                f"item {index} is nested too deeply to be stored as JSON "
                f"(Python's recursion limit is {sys.getrecursionlimit()})"
            ) from exc
        encoded.append(text)
    return encoded


def decode_item(raw: str | bytes, *, where: str) -> TResponseInputItem | None:
    """Decode one stored item, or log a warning and return `None` when it is corrupt.

    Args:
        raw: The stored JSON text.
        where: Names the row in the warning, for example `"session 'a' row 17"`.

    Returns:
        The item, or `None` when the text is not a JSON object.
    """
    try:
        value = _decode(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    except (ValueError, UnicodeDecodeError) as exc:
        logger.warning("skipping a corrupt stored item (%s): %s", where, exc)
        return None
    if not isinstance(value, dict):
        logger.warning(
            "skipping a corrupt stored item (%s): a JSON %s, not an object",
            where,
            type(value).__name__,
        )
        return None
    return cast(TResponseInputItem, value)


def check_session_id(session_id: str, *, nul_allowed: bool = True) -> None:
    """Check that a session id can be stored, so a bad id fails in the constructor.

    Args:
        session_id: The id, already known to be a `str`.
        nul_allowed: False for storage that cannot hold a NUL character (PostgreSQL text).

    Raises:
        ValueError: The id holds a lone surrogate (not encodable as UTF-8), or a NUL character
            where `nul_allowed` is False.
    """
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


MAX_LIMIT = 2**63 - 1
"""The largest limit passed to a database: a signed 64-bit integer."""


def check_limit(limit: int | None) -> int | None:
    """Validate a resolved history limit.

    Args:
        limit: The limit a read will use.

    Returns:
        `limit`, capped at `MAX_LIMIT` (no session holds more items; databases reject larger
        integers).

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
        except (ValueError, TypeError):
            pass
        decode_item(data, where=f"{where} row {row_id}")  # logs why it is corrupt
    return items
