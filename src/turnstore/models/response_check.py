"""Checking a model's response before the runner uses or stores any of it: no I/O.

The `openai` client builds its response objects without validation, so a server (or a proxy in
between) that answers with a malformed body produces objects with missing or wrongly typed
fields. The runner reads a response in one place, after `check_response` accepted it, so a
malformed answer fails as [`ModelBehaviorError`][turnstore.ModelBehaviorError] before anything of
it is stored, never as a `TypeError` or `AttributeError` halfway through a turn.

What is checked is what the runner relies on: the response id and status, `output` being a list
of items that each have a string `type`, the fields of messages and function calls, and the token
counts of `usage`. Output item types this release does not know are accepted (and stored as they
came), so a newer API version does not break older releases.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai.types.responses import Response, ResponseUsage
from pydantic import BaseModel

from ..exceptions import ModelBehaviorError

__all__ = ["check_output_item", "check_response", "check_usage"]


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_usage(usage: Any, what: str) -> ResponseUsage | None:
    """Return `usage` when its token counts are usable, `None` when it is absent.

    Args:
        usage: The `usage` of a response or of a compaction call.
        what: Names the response in the error message, for example `"response resp_1"`.

    Returns:
        `usage` unchanged, or `None`.

    Raises:
        ModelBehaviorError: A token count is missing, negative or not an integer, or a details
            field (`input_tokens_details`, `output_tokens_details`) is not an object.
    """
    if usage is None:
        return None
    for name in ("input_tokens", "output_tokens", "total_tokens"):
        value = _field(usage, name)
        if not _is_count(value):
            raise ModelBehaviorError(
                f"{what} has an unusable usage.{name}: {value!r} (expected a token count)"
            )
    for details, name in (
        ("input_tokens_details", "cached_tokens"),
        ("output_tokens_details", "reasoning_tokens"),
    ):
        holder = _field(usage, details)
        if holder is not None and not isinstance(holder, Mapping | BaseModel):
            raise ModelBehaviorError(
                f"{what} has an unusable usage.{details}: {holder!r:.200} (expected an object)"
            )
        value = _field(holder, name) if holder is not None else None
        if value is not None and not _is_count(value):
            raise ModelBehaviorError(
                f"{what} has an unusable usage.{details}.{name}: {value!r} (expected a token count)"
            )
    return usage  # type: ignore[no-any-return]


def check_output_item(index: int, item: Any, what: str) -> None:
    """Check one output item of a response (a streamed run checks each as it is done).

    Args:
        index: The item's position in the response's output.
        item: The item (a pydantic model or a dict).
        what: Names the response in the error message.

    Raises:
        ModelBehaviorError: The item has no type, or a message or function call in it lacks a
            field the runner reads.
    """
    kind = _field(item, "type")
    if not isinstance(kind, str) or not kind:
        raise ModelBehaviorError(
            f"{what}: output item {index} has no type (expected an object with a string "
            f"'type', got {type(item).__name__}: {item!r:.200})"
        )
    if kind == "message":
        content = _field(item, "content")
        if not isinstance(content, list):
            raise ModelBehaviorError(
                f"{what}: message output item {index} has no content list "
                f"(got {type(content).__name__})"
            )
        for position, part in enumerate(content):
            part_type = _field(part, "type")
            if not isinstance(part_type, str):
                raise ModelBehaviorError(
                    f"{what}: part {position} of message output item {index} has no type"
                )
            if part_type == "output_text" and not isinstance(_field(part, "text"), str):
                raise ModelBehaviorError(
                    f"{what}: output_text part {position} of message output item {index} has "
                    "no text string"
                )
    elif kind == "function_call":
        for name in ("name", "arguments", "call_id"):
            if not isinstance(_field(item, name), str):
                raise ModelBehaviorError(
                    f"{what}: function_call output item {index} has no string {name!r}"
                )


def check_response(response: Any) -> Response:
    """Return `response` once it has the shape the runner relies on.

    Args:
        response: What a model returned as its response.

    Returns:
        The same object, typed as a `Response`.

    Raises:
        ModelBehaviorError: `response` is not a Responses API response, its status is
            `"failed"`, its `output` is not a list of typed items, a message or function call in
            it lacks a field the runner reads, or its `usage` holds unusable token counts.
    """
    if not isinstance(response, Response):
        raise ModelBehaviorError(
            f"the model answered with {type(response).__name__} {response!r:.200}, "
            "not a Responses API response object"
        )
    response_id = getattr(response, "id", None)
    if not isinstance(response_id, str) or not response_id:
        raise ModelBehaviorError(f"the model's response has no id (got {response_id!r})")
    what = f"response {response_id}"
    if getattr(response, "status", None) == "failed":
        error = getattr(response, "error", None)
        detail = _field(error, "message") if error is not None else None
        raise ModelBehaviorError(f"{what} failed: {detail or 'no detail given'}")
    output = getattr(response, "output", None)
    if not isinstance(output, list):
        raise ModelBehaviorError(
            f"{what} has no output list (got {type(output).__name__}: {output!r:.200})"
        )
    for index, item in enumerate(output):
        check_output_item(index, item, what)
    check_usage(getattr(response, "usage", None), what)
    return response
