"""The stored format of `RedisSession`: URL schemes, key names and list elements.

No redis import here, so `open_session_store` can recognise a Redis URL without the extra.

For a key prefix `P` (default `agent_sessions`):

- `P:items:<session_id>`: a list, one element per item, oldest first. An element is
  `<milliseconds since the epoch>|<item JSON>`, so each item records when it was added.
- `P:index`: a sorted set of session ids scored by their last write (milliseconds), which
  [`open_session_store`][turnstore.open_session_store] and the `turnstore` CLI use to list
  sessions.
"""

from __future__ import annotations

import json

from ...items import TResponseInputItem
from ..codec import decode_item

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "REDIS_URL_SCHEMES",
    "decode_element",
    "decode_elements",
    "encode_element",
    "index_key",
    "items_key",
]

DEFAULT_KEY_PREFIX = "agent_sessions"
"""The key prefix of the OpenAI Agents SDK's `RedisSession`, so both read the same keys."""

REDIS_URL_SCHEMES = ("redis://", "rediss://", "unix://")
"""The URL schemes a Redis client accepts: plain, TLS, and a Unix socket."""

_STAMP_DIGITS = 24
"""The most digits a stored timestamp may have before the `|` (a fast-path bound)."""


def items_key(prefix: str, session_id: str) -> str:
    """Return the key of a session's item list.

    Args:
        prefix: The key prefix.
        session_id: The session id.

    Returns:
        `<prefix>:items:<session_id>`.
    """
    return f"{prefix}:items:{session_id}"


def index_key(prefix: str) -> str:
    """Return the key of the sorted set that indexes the sessions under a prefix.

    Args:
        prefix: The key prefix.

    Returns:
        `<prefix>:index`.
    """
    return f"{prefix}:index"


def encode_element(stamp_ms: int | str, text: str) -> str:
    """Return the list element that stores one encoded item and the time it was added.

    Args:
        stamp_ms: Milliseconds since the epoch.
        text: The item, encoded by `codec.encode_items`.

    Returns:
        `<stamp_ms>|<text>`.
    """
    return f"{stamp_ms}|{text}"


def decode_element(raw: bytes | str, *, where: str) -> tuple[int | None, TResponseInputItem | None]:
    """Split a stored list element into its timestamp and item.

    Args:
        raw: The element as stored.
        where: Names the element in the warning logged when it is corrupt.

    Returns:
        `(milliseconds, item)`; the item is `None` (with a logged warning) when corrupt.
    """
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    stamp, bar, body = text.partition("|")
    if not bar or not stamp.isdigit():
        return None, decode_item(text, where=where)  # logs the problem
    return int(stamp), decode_item(body, where=where)


_raw_decode = json.JSONDecoder().raw_decode


def decode_elements(raw: list[bytes | str], where: str) -> list[TResponseInputItem]:
    """Decode elements to items, skipping corrupt ones (the hot path of `get_items`).

    Args:
        raw: The stored elements, oldest first.
        where: Names the session in warnings, for example `"session 'a'"`.

    Returns:
        The valid items, in order.
    """
    items: list[TResponseInputItem] = []
    for element in raw:
        try:
            text = element.decode() if isinstance(element, bytes) else element
            bar = text.find("|", 0, _STAMP_DIGITS)
            # Parse the JSON in place, after the timestamp, without copying the body.
            value, end = _raw_decode(text, bar + 1)
            if bar > 0 and end == len(text) and type(value) is dict:
                items.append(value)  # type: ignore[arg-type]
                continue
        except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError: ValueError
            pass
        decode_element(element, where=f"an element of {where}")  # logs why it is corrupt
    return items
