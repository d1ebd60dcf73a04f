"""What the fake OpenAI server records and answers: requests, replies and response bodies.

`RecordedRequest` is one request the server received, `FakeReply` what it sends back, and the
builders make the bodies and streamed events the Responses API sends. The server itself is in
`__init__.py`, which exports every name here.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FakeReply",
    "Handler",
    "RecordedRequest",
    "function_call_item",
    "input_items",
    "message_item",
    "response_body",
    "sse_events_for",
    "text_response",
    "tool_call_response",
]

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids)}"


@dataclass
class RecordedRequest:
    """One request the server received.

    Attributes:
        method: The HTTP method, for example `"POST"`.
        path: The path without the query string, for example `"/v1/responses"`.
        query: The query string parsed into lists of values.
        headers: The request headers (lower-case names).
        body: The JSON body, or `None` when there was none.
        history: For a request naming a `previous_response_id` the server served, the items of
            that response chain, oldest first: each stored response's input items, then its
            output items. Empty otherwise.
        raw: The body's bytes as received (a file upload's multipart form, say).
    """

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    history: list[dict[str, Any]] = field(default_factory=list)
    raw: bytes = b""


@dataclass
class FakeReply:
    r"""What the server sends back for one request.

    Attributes:
        status: The HTTP status code.
        body: A JSON-serialisable body. For a streaming request to `/v1/responses` a response
            body is turned into server-sent events automatically (see `sse_events_for`).
        events: Explicit server-sent events to stream instead of `body`.
        headers: Extra response headers, for example `{"Retry-After": "0"}`.
        delay: Seconds to wait before answering (to provoke client timeouts or measure overlap).
        raw: Raw bytes to send as the body, for garbage or truncated answers.
        content_type: The `Content-Type` of a `raw` body: `"application/json"` by default;
            `"text/event-stream"` sends `raw` as a hand-written server-sent event stream (for
            example a frame that is not JSON, or a stream cut off mid-frame).

    Example:
        ```python
        server.enqueue(FakeReply(raw=b'{"id": "resp_1", "outp'))  # a truncated body
        server.enqueue(FakeReply(raw=b"data: not json\n\n", content_type="text/event-stream"))
        ```
    """

    status: int = 200
    body: Any = None
    events: list[dict[str, Any]] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None
    content_type: str = "application/json"


Handler = Callable[[RecordedRequest], "FakeReply | dict[str, Any] | None"]
"""A route: returns a reply (or a bare JSON body for status 200), or `None` to fall through."""


def message_item(text: str, *, item_id: str | None = None) -> dict[str, Any]:
    """Build an assistant message output item holding `text`."""
    return {
        "type": "message",
        "id": item_id or _next_id("msg"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call_item(
    name: str, arguments: dict[str, Any] | str, *, call_id: str | None = None
) -> dict[str, Any]:
    """Build a `function_call` item, as a response's output holds it, calling tool `name`.

    `arguments` is a dict, which is encoded as JSON, or a JSON string.
    """
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "type": "function_call",
        "id": _next_id("fc"),
        "call_id": call_id or _next_id("call"),
        "name": name,
        "arguments": args,
        "status": "completed",
    }


def response_body(
    output: list[dict[str, Any]],
    *,
    response_id: str | None = None,
    model: str = "o3",
    input_tokens: int = 3,
    output_tokens: int = 2,
    cached_tokens: int = 0,
) -> dict[str, Any]:
    """Build a complete Responses API response object around `output` items.

    `cached_tokens` is the part of `input_tokens` reported as served from the prompt cache.
    """
    return {
        "id": response_id or _next_id("resp"),
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": cached_tokens},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def text_response(text: str, **kwargs: Any) -> dict[str, Any]:
    """Build a response whose only output is an assistant message with `text`."""
    return response_body([message_item(text)], **kwargs)


def tool_call_response(
    name: str, arguments: dict[str, Any] | str, *, call_id: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    """Build a response that asks for one function call."""
    return response_body([function_call_item(name, arguments, call_id=call_id)], **kwargs)


def input_items(value: Any) -> list[dict[str, Any]]:
    """The input of a request as a list of items: a string becomes one user message.

    Args:
        value: The request's `input`: a string, a list of items, or `None`.

    Returns:
        Copies of the items (never the request's own objects).
    """
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if isinstance(value, list):
        return [copy.deepcopy(item) for item in value if isinstance(item, dict)]
    return []


def sse_events_for(body: dict[str, Any], *, chunk: int = 4) -> list[dict[str, Any]]:
    """Turn a response body into the event sequence the Responses streaming API sends.

    Text is split into deltas of `chunk` characters. The sequence satisfies both
    `responses.create(stream=True)` and the stricter `responses.stream()` helper.
    """
    seq = itertools.count()
    in_progress = {**body, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": in_progress, "sequence_number": next(seq)},
        {"type": "response.in_progress", "response": in_progress, "sequence_number": next(seq)},
    ]
    for index, item in enumerate(body.get("output", [])):
        if item.get("type") == "message":
            added = {**item, "status": "in_progress", "content": []}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": added,
                    "sequence_number": next(seq),
                }
            )
            for c_index, part in enumerate(item.get("content", [])):
                text = part.get("text", "")
                events.append(
                    {
                        "type": "response.content_part.added",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": c_index,
                        "part": {"type": "output_text", "text": "", "annotations": []},
                        "sequence_number": next(seq),
                    }
                )
                for start in range(0, len(text), chunk):
                    events.append(
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": c_index,
                            "delta": text[start : start + chunk],
                            "logprobs": [],
                            "sequence_number": next(seq),
                        }
                    )
                events.append(
                    {
                        "type": "response.output_text.done",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": c_index,
                        "text": text,
                        "logprobs": [],
                        "sequence_number": next(seq),
                    }
                )
                events.append(
                    {
                        "type": "response.content_part.done",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": c_index,
                        "part": part,
                        "sequence_number": next(seq),
                    }
                )
        else:
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": item,
                    "sequence_number": next(seq),
                }
            )
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": item,
                "sequence_number": next(seq),
            }
        )
    events.append({"type": "response.completed", "response": body, "sequence_number": next(seq)})
    return events
