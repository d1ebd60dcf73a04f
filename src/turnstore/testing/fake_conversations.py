"""Stateful fake routes for the Conversations API and `POST /v1/responses/compact`.

Install them on a [`FakeOpenAIServer`][turnstore.testing.FakeOpenAIServer] and point the real
`openai` client at the server: conversations are kept in memory, so creates, lists (with
`order`, `limit` and `after` paging), item deletes and conversation deletes behave like the real
API, and faults can be injected per request.

Example:
    ```python
    from turnstore.testing import FakeCompactionAPI, FakeConversationsAPI, FakeOpenAIServer

    with FakeOpenAIServer() as server:
        conversations = FakeConversationsAPI().install(server)
        compaction = FakeCompactionAPI().install(server)
        client = server.async_client()
        conversation = await client.conversations.create(items=[])
        await client.conversations.items.create(
            conversation.id, items=[{"role": "user", "content": "Hi"}]
        )
        assert conversations.items(conversation.id)[0]["content"][0]["text"] == "Hi"
    ```
"""

from __future__ import annotations

import copy
import itertools
import re
import threading
from collections.abc import Callable
from typing import Any, cast

from .fake_openai import FakeOpenAIServer, FakeReply, RecordedRequest, input_items

__all__ = ["FakeCompactionAPI", "FakeConversationsAPI"]

_MAX_CREATE_ITEMS = 20
_Reply = FakeReply | dict[str, Any]
_ITEM_PATH = re.compile(r"^/v1/conversations/([^/]+)/items(?:/([^/]+))?$")
_CONVERSATION_PATH = re.compile(r"^/v1/conversations/([^/]+)$")

_ID_PREFIX = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
    "compaction": "cmp",
}


def _error(status: int, message: str) -> FakeReply:
    return FakeReply(
        status=status, body={"error": {"message": message, "type": "invalid_request_error"}}
    )


class _Faults:
    """Replies to send instead of the normal answer, matched by method and path pattern."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # [method, path pattern, reply, matching requests still to let through first]
        self._pending: list[list[Any]] = []

    def add(self, method: str, path_pattern: str, reply: FakeReply, times: int, skip: int) -> None:
        with self._lock:
            for n in range(times):
                entry = [method.upper(), re.compile(path_pattern), reply, skip if n == 0 else 0]
                self._pending.append(entry)

    def take(self, request: RecordedRequest) -> FakeReply | None:
        with self._lock:
            for entry in self._pending:
                if entry[0] == request.method and entry[1].search(request.path):
                    if entry[3] > 0:
                        entry[3] -= 1
                        return None
                    self._pending.remove(entry)
                    return cast(FakeReply, entry[2])
        return None


class FakeConversationsAPI:
    """An in-memory Conversations API: `/v1/conversations` and its items.

    Items are stored as the real API returns them: each gets an `id`, messages get
    `"type": "message"`, a `status`, and a content list (a string content becomes one
    `input_text` part, or `output_text` for the assistant). A create request with more than 20
    items is refused with 400, as the real API does.

    Attributes:
        conversations: Conversation id -> its items, oldest first.
        deleted: The ids of deleted conversations.
    """

    def __init__(self) -> None:
        self.conversations: dict[str, list[dict[str, Any]]] = {}
        self.deleted: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._faults = _Faults()

    def install(self, server: FakeOpenAIServer) -> FakeConversationsAPI:
        """Add the routes to `server` and return `self`."""
        server.route("POST", "/v1/conversations", self._handle)
        server.route("GET", "/v1/conversations", self._handle)
        server.route("DELETE", "/v1/conversations", self._handle)
        return self

    def fail_next(
        self,
        method: str,
        path_pattern: str,
        reply: FakeReply | None = None,
        *,
        times: int = 1,
        skip: int = 0,
    ) -> None:
        """Answer the next matching request(s) with `reply` (default: a 500) instead.

        Args:
            method: The HTTP method, for example `"POST"`.
            path_pattern: A regular expression searched in the path, for example `r"/items$"`.
            reply: The reply to send; a 500 error by default. A `delay` provokes client timeouts.
            times: How many matching requests get the fault.
            skip: How many matching requests to answer normally before the first fault.
        """
        self._faults.add(method, path_pattern, reply or FakeReply(status=500), times, skip)

    def items(self, conversation_id: str) -> list[dict[str, Any]]:
        """Return a copy of the stored items of a conversation, oldest first."""
        with self._lock:
            return copy.deepcopy(self.conversations[conversation_id])

    # -- request handling ------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_fake{next(self._ids)}"

    def _stored(self, item: dict[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(item)
        if "role" in stored and "type" not in stored:
            stored["type"] = "message"
        kind = stored.get("type", "item")
        if stored.get("type") == "message":
            content = stored.get("content")
            if isinstance(content, str):
                part_type = "output_text" if stored.get("role") == "assistant" else "input_text"
                part: dict[str, Any] = {"type": part_type, "text": content}
                if part_type == "output_text":
                    part["annotations"] = []
                stored["content"] = [part]
            stored.setdefault("status", "completed")
        if not stored.get("id"):
            stored["id"] = self._new_id(_ID_PREFIX.get(kind, "item"))
        return stored

    def _conversation(self, conversation_id: str) -> dict[str, Any]:
        return {"id": conversation_id, "object": "conversation", "created_at": 0, "metadata": {}}

    def _handle(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        fault = self._faults.take(request)
        if fault is not None:
            return fault
        path = request.path
        with self._lock:
            if path == "/v1/conversations" and request.method == "POST":
                return self._create_conversation(request)
            if match := _ITEM_PATH.match(path):
                conversation_id, item_id = match.groups()
                if conversation_id not in self.conversations:
                    return _error(404, f"Conversation {conversation_id} not found")
                if request.method == "POST" and item_id is None:
                    return self._create_items(conversation_id, request)
                if request.method == "GET" and item_id is None:
                    return self._list_items(conversation_id, request)
                if request.method == "GET":
                    return self._get_item(conversation_id, item_id)
                if request.method == "DELETE":
                    return self._delete_item(conversation_id, item_id)
            if match := _CONVERSATION_PATH.match(path):
                conversation_id = match.group(1)
                if conversation_id not in self.conversations:
                    return _error(404, f"Conversation {conversation_id} not found")
                if request.method == "GET":
                    return self._conversation(conversation_id)
                if request.method == "DELETE":
                    del self.conversations[conversation_id]
                    self.deleted.append(conversation_id)
                    return {
                        "id": conversation_id,
                        "object": "conversation.deleted",
                        "deleted": True,
                    }
        return None

    def _create_conversation(self, request: RecordedRequest) -> FakeReply | dict[str, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        items = body.get("items") or []
        if len(items) > _MAX_CREATE_ITEMS:
            return _error(400, f"You may add up to {_MAX_CREATE_ITEMS} items at a time.")
        conversation_id = self._new_id("conv")
        self.conversations[conversation_id] = [self._stored(item) for item in items]
        return self._conversation(conversation_id)

    def _create_items(self, conversation_id: str, request: RecordedRequest) -> _Reply:
        body = request.body if isinstance(request.body, dict) else {}
        items = body.get("items")
        if not isinstance(items, list) or not items:
            return _error(400, "items must be a non-empty list")
        if len(items) > _MAX_CREATE_ITEMS:
            return _error(400, f"You may add up to {_MAX_CREATE_ITEMS} items at a time.")
        stored = [self._stored(item) for item in items]
        self.conversations[conversation_id].extend(stored)
        return {
            "object": "list",
            "data": copy.deepcopy(stored),
            "first_id": stored[0]["id"],
            "last_id": stored[-1]["id"],
            "has_more": False,
        }

    def _list_items(self, conversation_id: str, request: RecordedRequest) -> _Reply:
        order = request.query.get("order", ["desc"])[0]
        limit = int(request.query.get("limit", ["20"])[0])
        if not 1 <= limit <= 100:
            return _error(400, "limit must be between 1 and 100")
        after = request.query.get("after", [None])[0]
        items = list(self.conversations[conversation_id])
        if order == "desc":
            items.reverse()
        if after is not None:
            ids = [item["id"] for item in items]
            if after not in ids:
                return _error(400, f"after: unknown item {after}")
            items = items[ids.index(after) + 1 :]
        page = copy.deepcopy(items[:limit])
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else "",
            "last_id": page[-1]["id"] if page else "",
            "has_more": len(items) > limit,
        }

    def _get_item(self, conversation_id: str, item_id: str) -> _Reply:
        for item in self.conversations[conversation_id]:
            if item["id"] == item_id:
                return copy.deepcopy(item)
        return _error(404, f"Item {item_id} not found")

    def _delete_item(self, conversation_id: str, item_id: str) -> _Reply:
        items = self.conversations[conversation_id]
        for index, item in enumerate(items):
            if item["id"] == item_id:
                del items[index]
                return self._conversation(conversation_id)
        return _error(404, f"Item {item_id} not found")


CompactionOutput = Callable[[dict[str, Any]], list[dict[str, Any]]]
"""Builds the compacted output items from a compact request body."""


class FakeCompactionAPI:
    """A fake `POST /v1/responses/compact`.

    By default it answers like the real API: the user messages of what it compacts, followed by
    one `compaction` item whose `encrypted_content` records how many items it replaced
    (`"compacted:<n>"`, or `"compacted:<previous_response_id>"`). What it compacts is the
    request's `input`, after the whole response chain that `previous_response_id` names (the
    server keeps the responses it served; an unknown id is answered with 404 before this
    route). Pass `output` to build a different answer, and use `fail_next` to inject errors or
    delays.

    Args:
        output: A function from the request body to the output items.
        input_tokens: The usage the answer reports.
        output_tokens: The usage the answer reports.

    Attributes:
        bodies: The JSON body of every compact request received, in order.
    """

    def __init__(
        self,
        *,
        output: CompactionOutput | None = None,
        input_tokens: int = 40,
        output_tokens: int = 8,
    ) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._output = output or self.default_output
        self._input_tokens = input_tokens
        self._output_tokens = output_tokens
        self._ids = itertools.count(1)
        self._faults = _Faults()
        self._lock = threading.Lock()

    def install(self, server: FakeOpenAIServer) -> FakeCompactionAPI:
        """Add the route to `server` and return `self`."""
        server.route("POST", "/v1/responses/compact", self._handle)
        return self

    def fail_next(self, reply: FakeReply | None = None, *, times: int = 1) -> None:
        """Answer the next compact request(s) with `reply` (default: a 500) instead."""
        fault = reply or FakeReply(status=500)
        self._faults.add("POST", r"^/v1/responses/compact$", fault, times, 0)

    @staticmethod
    def default_output(body: dict[str, Any]) -> list[dict[str, Any]]:
        """The real API's shape: the user messages, then one compaction item.

        Args:
            body: The request body, its `input` holding every item to compact (the
                `previous_response_id` chain first, when the request named one).

        Returns:
            The output items.
        """
        kept: list[dict[str, Any]] = []
        items = input_items(body.get("input"))
        for item in items:
            if item.get("role") == "user" and item.get("type", "message") == "message":
                content = item.get("content")
                if isinstance(content, str):
                    content = [{"type": "input_text", "text": content}]
                kept.append({"type": "message", "role": "user", "content": content})
        if "previous_response_id" in body:
            summary = f"compacted:{body['previous_response_id']}"
        else:
            summary = f"compacted:{len(items)}"
        return [*kept, {"type": "compaction", "encrypted_content": summary}]

    def _handle(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        body = request.body if isinstance(request.body, dict) else {}
        with self._lock:
            self.bodies.append(body)
            number = next(self._ids)
        fault = self._faults.take(request)
        if fault is not None:
            return fault
        compacted = dict(body)
        if request.history:
            compacted["input"] = [*request.history, *input_items(body.get("input"))]
        output = self._output(compacted)
        for index, item in enumerate(output):
            if item.get("type") == "compaction":
                item.setdefault("id", f"cmp_fake{number}_{index}")
            elif item.get("type") == "message":
                item.setdefault("id", f"msg_fake{number}_{index}")
                item.setdefault("status", "completed")
        return {
            "id": f"resp_compact_{number}",
            "object": "response.compaction",
            "created_at": 0,
            "output": output,
            "usage": {
                "input_tokens": self._input_tokens,
                "output_tokens": self._output_tokens,
                "total_tokens": self._input_tokens + self._output_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
