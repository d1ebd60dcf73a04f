"""Merging a session's history with a run's new input: pure functions, no I/O.

[`Runner.run`][turnstore.Runner.run] reads the history at its start, merges it here with the new
input (optionally through `RunConfig.session_input_callback`), saves only what is new, and sends
the merged list, minus orphaned tool outputs, to the model.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from .exceptions import UserError
from .items import TResponseInputItem
from .memory.history import drop_orphan_tool_outputs

__all__ = [
    "MergedInput",
    "SessionInputCallback",
    "drop_orphan_tool_outputs",
    "merge_session_input",
]

SessionInputCallback: TypeAlias = Callable[
    [list[TResponseInputItem], list[TResponseInputItem]],
    "list[TResponseInputItem] | Awaitable[list[TResponseInputItem]]",
]
"""`callback(history, new_items) -> items`, sync or async: decides what the model sees.

Without one, the model sees the history followed by the new input. The callback receives copies
of both lists, so it may change them freely. The list it returns is the model's input. Items it
returns from the history, or equal copies of them, are not saved again. Everything else it returns
(the new input, or items it made up) is saved once, in the order returned.

Example:
    ```python
    async def latest_ten(history, new_items):
        return history[-10:] + new_items  # only `new_items` is saved

    config = RunConfig(session_input_callback=latest_ten)
    ```
"""


@dataclass(frozen=True)
class MergedInput:
    """The result of merging history with new input.

    Attributes:
        model_input: What the model receives, in order (orphaned tool outputs already dropped).
        to_save: The new items to append to the session: never an item of the history.
    """

    model_input: list[TResponseInputItem]
    to_save: list[TResponseInputItem]


def _key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, default=repr)


async def merge_session_input(
    history: list[TResponseInputItem],
    new_items: list[TResponseInputItem],
    callback: SessionInputCallback | None = None,
) -> MergedInput:
    """Combine the history and the new input into the model's input and the items to save.

    Without a callback the model sees the history followed by the new items, and the new items
    are saved. With a callback, it receives deep copies of both lists and returns the model's
    input; an item it returns is recognised as history by identity (one of the copies it was
    given) or, failing that, by equal content, and is then not saved again. Every other returned
    item is saved once, in the order returned.

    Args:
        history: The items read from the session.
        new_items: The run's new input as items.
        callback: An optional `callback(history, new_items)`, sync or async, returning a list.

    Returns:
        The model input (orphaned tool outputs dropped) and the items to save.

    Raises:
        UserError: `callback` is not callable, or did not return a list.

    Example:
        ```python
        def keep_last_four(history, new_items):
            return history[-4:] + new_items

        merged = await merge_session_input(history, new_items, keep_last_four)
        ```
    """
    if callback is None:
        combined = [copy.deepcopy(item) for item in (*history, *new_items)]
        return MergedInput(
            model_input=drop_orphan_tool_outputs(combined),
            to_save=[copy.deepcopy(item) for item in new_items],
        )
    if not callable(callback):
        raise UserError(f"session_input_callback must be a function, not {type(callback).__name__}")
    history_copy = copy.deepcopy(history)
    new_copy = copy.deepcopy(new_items)
    history_ids = {id(item) for item in history_copy}
    new_ids = {id(item) for item in new_copy}
    returned = callback(history_copy, new_copy)
    if inspect.isawaitable(returned):
        returned = await returned
    if not isinstance(returned, list):
        raise UserError(
            "session_input_callback must return a list of input items, "
            f"not {type(returned).__name__}"
        )
    history_keys = Counter(_key(item) for item in history)
    unclaimed_new = Counter(_key(item) for item in new_items)
    for item in new_copy:
        # New items returned by identity claim their content first.
        if any(item is r for r in returned):
            unclaimed_new[_key(item)] -= 1
    seen_new: set[int] = set()
    to_save: list[TResponseInputItem] = []
    for item in returned:
        if id(item) in history_ids:
            continue
        if id(item) in new_ids:
            if id(item) not in seen_new:
                seen_new.add(id(item))
                to_save.append(copy.deepcopy(item))
            continue
        key = _key(item)
        if unclaimed_new[key] > 0:
            unclaimed_new[key] -= 1
        elif history_keys[key] > 0:
            continue  # a rebuilt copy of a history item: already stored
        to_save.append(copy.deepcopy(item))
    return MergedInput(
        model_input=drop_orphan_tool_outputs([copy.deepcopy(item) for item in returned]),
        to_save=to_save,
    )
