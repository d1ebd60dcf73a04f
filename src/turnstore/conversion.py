"""Turning model output into stored input items, and cleaning stored items before a model call.

A session stores Responses API *input* items (plain dicts), the same shape the OpenAI Agents SDK
stores, so one history serves both runners.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel

from .items import OUTPUT_ONLY_KEYS, TResponseInputItem, clean_input_item

__all__ = ["clean_input_item", "input_items_from", "output_item_to_input_item"]


def output_item_to_input_item(item: BaseModel | Mapping[str, Any]) -> TResponseInputItem:
    """Convert one Responses API output item into the equivalent input item.

    Output items (a message, a function call, a reasoning item, a hosted tool call, ...) are
    valid input items once the fields the server filled in only for output are dropped. Fields
    the server did not send are left out (`exclude_unset`), as the OpenAI Agents SDK does.

    Args:
        item: An output item from `response.output`, as a pydantic model or a dict.

    Returns:
        A new plain dict, safe to store and to send back as input.

    Example:
        ```python
        response = await client.responses.create(model="o3", input="Hi")
        items = [output_item_to_input_item(item) for item in response.output]
        ```
    """
    if isinstance(item, BaseModel):
        data: dict[str, Any] = item.model_dump(mode="json", exclude_unset=True)
    elif isinstance(item, Mapping):
        data = copy.deepcopy(dict(item))
    else:
        raise TypeError(
            f"an output item must be a pydantic model or a dict, not {type(item).__name__}"
        )
    for key in OUTPUT_ONLY_KEYS:
        data.pop(key, None)
    return cast(TResponseInputItem, data)


def input_items_from(value: str | list[TResponseInputItem]) -> list[TResponseInputItem]:
    """Turn a run's input into a list of input items.

    Args:
        value: A string (one user message) or a list of input items (dicts).

    Returns:
        A new list; a list input is deep-copied so later changes to it do not leak in.

    Raises:
        TypeError: `value` is neither a string nor a list of dicts (the message names the
            first bad item).
    """
    if isinstance(value, str):
        return [cast(TResponseInputItem, {"role": "user", "content": value})]
    if not isinstance(value, list):
        raise TypeError(
            f"input must be a string or a list of input item dicts, not {type(value).__name__}"
        )
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise TypeError(
                f"input item {index} must be a dict (a Responses API input item), "
                f"not {type(item).__name__}: {item!r}"
            )
    return [cast(TResponseInputItem, copy.deepcopy(dict(item))) for item in value]
