"""History that fits: the window of a session's history that a run loads. No I/O but reads.

A run loads the latest items that fit every limit of its settings
([`SessionSettings`][turnstore.SessionSettings]): `limit` items, `limit_turns` turns (a turn
starts at a user message) and `limit_tokens` estimated tokens. Cutting a history can leave a tool
output whose call was cut off; the Responses API rejects such an output, so the window drops it
(the session keeps it). The window is therefore never longer than any limit allows, and never
starts with a tool output.

[`load_history`][turnstore.memory.load_history] reads the window through `get_items(limit)`
alone, so it works on every session (the OpenAI Agents SDK's included): with a turn or token limit
it reads the latest 64 items and doubles the read until the window is complete.

`load_unfinished_turn` reads what a run left after the history's last message (the tool calls
and outputs of an interrupted turn), whatever the window: a run completes those calls even when a
limit cut them off.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..items import OUTPUT_TYPE_OF_CALL
from .settings import SessionSettings, SessionSettingsLike, coerce_session_settings

if TYPE_CHECKING:
    from ..items import TResponseInputItem

__all__ = [
    "drop_orphan_tool_outputs",
    "estimate_item_tokens",
    "fit_history",
    "is_user_message",
    "load_history",
    "load_unfinished_turn",
]

_OUTPUT_TYPES = frozenset(OUTPUT_TYPE_OF_CALL.values())
_FIRST_READ = 64


def is_user_message(item: Any) -> bool:
    """Whether `item` is a user message: the start of a turn.

    Args:
        item: An input item.

    Returns:
        `True` for a dict with `role == "user"` (with or without `"type": "message"`).
    """
    return isinstance(item, Mapping) and item.get("role") == "user"


def estimate_item_tokens(item: Any) -> int:
    """Estimate how many tokens `item` costs in a model's input: a quarter of its JSON length.

    The estimate is the length in characters of the item's compact JSON (non-ASCII text kept as
    it is), divided by 4 and rounded up. It needs no tokenizer and is close for English text;
    text in other scripts, and base64 payloads, usually cost more tokens per character, so give
    such histories a smaller budget.

    Args:
        item: An input item.

    Returns:
        The estimate, at least 1.

    Example:
        ```python
        estimate_item_tokens({"role": "user", "content": "Hello"})  # 9 (33 characters of JSON)
        ```
    """
    text = json.dumps(item, ensure_ascii=False, separators=(",", ":"), default=str)
    return max(1, math.ceil(len(text) / 4))


def drop_orphan_tool_outputs(items: list[TResponseInputItem]) -> list[TResponseInputItem]:
    """Remove tool outputs whose call is not in the list.

    A history limit can cut a conversation between a tool call and its output; the Responses API
    rejects an output without its call, so the orphan is left out (the session itself keeps it).

    Args:
        items: Input items in order.

    Returns:
        A new list without the orphaned outputs.
    """
    call_ids = {
        item.get("call_id")
        for item in items
        if isinstance(item, Mapping) and item.get("type") in OUTPUT_TYPE_OF_CALL
    }
    return [
        item
        for item in items
        if not (
            isinstance(item, Mapping)
            and item.get("type") in _OUTPUT_TYPES
            and item.get("call_id") not in call_ids
        )
    ]


def _turn_start(items: list[TResponseInputItem], turns: int) -> int | None:
    """Index where the latest `turns` turns start, or `None` when fewer turns are present."""
    if turns == 0:
        return len(items)
    seen = 0
    for index in range(len(items) - 1, -1, -1):
        if is_user_message(items[index]):
            seen += 1
            if seen == turns:
                return index
    return None


def _token_start(items: list[TResponseInputItem], budget: int) -> int | None:
    """Index of the oldest item of the latest run that fits `budget`; `None` when all fit."""
    total = 0
    for index in range(len(items) - 1, -1, -1):
        total += estimate_item_tokens(items[index])
        if total > budget:
            return index + 1
    return None


def fit_history(
    items: list[TResponseInputItem], settings: SessionSettingsLike | None
) -> list[TResponseInputItem]:
    """Cut `items` (the latest items of a history, oldest first) to the window of `settings`.

    Applies `limit_turns` and `limit_tokens` (the shorter window wins), then drops tool outputs
    whose call is outside the window. `limit` is not applied here: it bounds the read
    ([`load_history`][turnstore.memory.load_history] passes it to `get_items`).

    Args:
        items: History items, oldest first.
        settings: The limits (settings or a dict of them); `None` keeps every item.

    Returns:
        A new list: the window, without orphaned tool outputs.
    """
    resolved = coerce_session_settings(settings) or SessionSettings()
    start = 0
    if resolved.limit_turns is not None:
        start = max(start, _turn_start(items, resolved.limit_turns) or 0)
    if resolved.limit_tokens is not None:
        start = max(start, _token_start(items, resolved.limit_tokens) or 0)
    return drop_orphan_tool_outputs(list(items[start:]))


def _window_complete(items: list[TResponseInputItem], settings: SessionSettings) -> bool:
    """Whether `items` already holds the whole window (reading further back changes nothing)."""
    # Either limit alone bounds the window: once one of them cuts inside `items`, older items
    # are outside the window whatever the other says.
    turns, tokens = settings.limit_turns, settings.limit_tokens
    return (turns is not None and _turn_start(items, turns) is not None) or (
        tokens is not None and _token_start(items, tokens) is not None
    )


async def load_history(
    session: Any, settings: SessionSettingsLike | None = None
) -> list[TResponseInputItem]:
    """Read the window of `session`'s history that fits `settings`.

    With only `limit` (or no limit), this is one `get_items` call. With `limit_turns` or
    `limit_tokens`, it reads the latest 64 items (or `limit`, if smaller) and doubles the read
    until the window is complete or the history (or `limit`) is exhausted. The result never holds
    a tool output whose call it does not hold.

    Args:
        session: Any session (an object with `get_items(limit)`).
        settings: The limits; `None` uses the session's own `session_settings`. Fields left
            `None` here do not fall back to the session's settings: resolve them first (as the
            runner does, run settings over session settings).

    Returns:
        The window, oldest first.

    Raises:
        TypeError: `settings` is of another type or names an unknown setting.
        Exception: Whatever `session.get_items` raises; nothing is swallowed.

    Example:
        ```python
        from turnstore.memory import load_history

        window = await load_history(session, {"limit_turns": 3, "limit_tokens": 4_000})
        ```
    """
    if settings is None:
        settings = getattr(session, "session_settings", None)
        if settings is not None and not isinstance(settings, SessionSettings | Mapping):
            settings = {"limit": getattr(settings, "limit", None)}
    resolved = coerce_session_settings(settings) or SessionSettings()
    limit = resolved.limit
    if resolved.fits_by_items_only:
        items = await session.get_items(limit) if limit is not None else await session.get_items()
        return drop_orphan_tool_outputs(list(items))
    read = _FIRST_READ if limit is None else min(_FIRST_READ, limit)
    while True:
        items = list(await session.get_items(read))
        exhausted = len(items) < read or (limit is not None and read >= limit)
        if exhausted or _window_complete(items, resolved):
            return fit_history(items, resolved)
        read = read * 2 if limit is None else min(read * 2, limit)


def _after_last_message(items: list[TResponseInputItem]) -> int | None:
    """Index just after the last message of `items` (any role), or `None` when it holds none."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, Mapping) and (
            item.get("type", "message") == "message" or "role" in item
        ):
            return index + 1
    return None


async def load_unfinished_turn(
    session: Any, window: list[TResponseInputItem], *, whole: bool = False
) -> list[TResponseInputItem]:
    """Read the items stored after the last message of `session`'s history, beyond `window`.

    These are the tool calls (and the outputs of some of them) of a turn that was interrupted
    before its tools all returned. A history window can cut them off, wholly or in part (a
    `limit` of 1 keeps the last call of a parallel turn, a `limit_tokens` smaller than a call
    keeps none), so the window alone does not tell which calls still need an output. When
    `window` holds a message, the items after it are the answer and nothing is read; otherwise
    the latest 64 items are read, and the read doubles until it reaches a message or the start
    of the history.

    Args:
        session: Any session (an object with `get_items(limit)`).
        window: The latest items of the history, oldest first, as
            [`load_history`][turnstore.memory.load_history] returned them.
        whole: `window` is the whole history (it was read with no limit): nothing is read.

    Returns:
        The items after the last message, oldest first (empty when the history ends with one).

    Raises:
        Exception: Whatever `session.get_items` raises; nothing is swallowed.
    """
    start = _after_last_message(window)
    if start is not None or whole:
        return list(window[start or 0 :])
    read = _FIRST_READ
    while True:
        items = list(await session.get_items(read))
        start = _after_last_message(items)
        if start is not None or len(items) < read:
            return items[start or 0 :]
        read *= 2
