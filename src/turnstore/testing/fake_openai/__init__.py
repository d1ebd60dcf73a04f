"""A fake OpenAI-compatible HTTP server for tests, on 127.0.0.1.

Point the real `openai` client at it (`base_url=server.base_url`) and script what it answers.
Nothing in the client is patched: requests travel over a real socket, so retries, streaming and
error mapping are exercised exactly as in production.

Like the API, the server keeps every response it serves to `POST /v1/responses` (its input and
output items) unless the request says `"store": false`. A request naming a
`previous_response_id` continues that chain: handlers see the chain's items in
`RecordedRequest.history`, and an id the server never served (or did not store) is answered
with the API's 404, for `/v1/responses` and `/v1/responses/compact` alike.

From a shell, `python -m turnstore.testing.fake_openai [--port N]` runs it with every endpoint
the examples use and replies that quote the conversation, until Ctrl-C (see `__main__.py`).

Example:
    ```python
    from turnstore.testing import FakeOpenAIServer, text_response

    with FakeOpenAIServer() as server:
        server.enqueue(text_response("Hello!"))
        client = server.async_client()
        response = await client.responses.create(model="o3", input="Hi")
        assert response.output_text == "Hello!"
        assert server.requests[0].body["input"] == "Hi"
    ```
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "FakeOpenAIServer",
    "FakeReply",
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

# The requests that continue a stored response chain when they name a previous_response_id.
_CHAINED_PATHS = frozenset({"/v1/responses", "/v1/responses/compact"})


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
    """Build a function call output item asking for tool `name` with `arguments`."""
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


def _previous_response_not_found(response_id: str) -> FakeReply:
    # The body the API sends for an unknown (or unstored) previous_response_id.
    return FakeReply(
        status=404,
        body={
            "error": {
                "message": f"Previous response with id '{response_id}' not found.",
                "type": "invalid_request_error",
                "param": "previous_response_id",
                "code": "previous_response_not_found",
            }
        },
    )


@dataclass
class _StoredResponse:
    previous_response_id: str | None
    input: list[dict[str, Any]]
    output: list[dict[str, Any]]


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


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 makes a burst of concurrent clients wait a second for the
    # kernel to retry their connection, which would distort any measurement of parallelism.
    request_queue_size = 128
    daemon_threads = True


class FakeOpenAIServer:
    """An OpenAI-compatible HTTP server on 127.0.0.1, run in a background thread.

    Replies come, in order of precedence, from:

    1. routes added with `route(method, path_prefix, handler)` (a handler may return `None` to
       fall through);
    2. the queue filled by `enqueue(...)`, for `POST /v1/responses` only;
    3. a default `text_response("ok")` for `POST /v1/responses`, and 404 otherwise.

    Every request is recorded in `requests` before it is answered. A successful response to
    `POST /v1/responses` is kept with its input, as the API keeps it (not with `"store": false`),
    so a later request can continue it with `previous_response_id` (see `response_chain`); an
    unknown `previous_response_id` is answered with 404 before any route sees the request.

    Args:
        default_delay: Seconds added before every answer (to simulate network latency).
        port: The TCP port to listen on; 0 (the default) picks a free one.
    """

    def __init__(self, *, default_delay: float = 0.0, port: int = 0) -> None:
        self.default_delay = default_delay
        self._port = port
        self.requests: list[RecordedRequest] = []
        self._queue: deque[FakeReply | dict[str, Any] | Handler] = deque()
        self._routes: list[tuple[str, str, Handler]] = []
        self._stored: dict[str, _StoredResponse] = {}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Start serving and return `self`.

        Raises:
            OSError: The port is taken (or otherwise cannot be listened on).
        """
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _handle(self) -> None:
                server._dispatch(self)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle

        httpd = _Server(("127.0.0.1", self._port), _Handler)
        self._httpd = httpd
        # A short poll interval: stop() waits up to one interval for the serving loop to notice.
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- configuration -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._httpd is None:
            raise RuntimeError("the fake OpenAI server is not running; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The base URL to give the client, ending in `/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def async_client(self, **kwargs: Any) -> AsyncOpenAI:
        """Return an `AsyncOpenAI` client pointed at this server (no retries unless asked)."""
        from openai import AsyncOpenAI  # here, not at the top: the server alone needs no openai

        options: dict[str, Any] = {
            "api_key": "sk-test",
            "base_url": self.base_url,
            "max_retries": 0,
        }
        options.update(kwargs)
        return AsyncOpenAI(**options)

    def enqueue(self, *replies: FakeReply | dict[str, Any] | Handler) -> None:
        """Queue replies for the next `POST /v1/responses` requests, first in, first out.

        Each reply is a `FakeReply`, a response body (sent with status 200), or a handler called
        with the request.
        """
        with self._lock:
            self._queue.extend(replies)

    def route(self, method: str, path_prefix: str, handler: Handler) -> None:
        """Answer requests whose method matches and whose path starts with `path_prefix`."""
        with self._lock:
            self._routes.append((method.upper(), path_prefix, handler))

    def requests_to(self, path: str, method: str = "POST") -> list[RecordedRequest]:
        """Return the recorded requests with exactly this method and path."""
        with self._lock:
            return [r for r in self.requests if r.path == path and r.method == method]

    def response_chain(self, response_id: str) -> list[dict[str, Any]]:
        """Return the items the chain ending at `response_id` holds, oldest first.

        Each response of the chain contributes its input items, then its output items, as the
        API feeds them to the model when a request continues the chain.

        Args:
            response_id: The id of a response this server served and stored.

        Returns:
            Copies of the chain's items.

        Raises:
            KeyError: The server never served (or did not store) a response with that id, or
                one of the chain's earlier responses.
        """
        with self._lock:
            chain: list[_StoredResponse] = []
            current: str | None = response_id
            while current is not None:
                stored = self._stored.get(current)
                if stored is None:
                    raise KeyError(current)
                chain.append(stored)
                current = stored.previous_response_id
        items: list[dict[str, Any]] = []
        for stored in reversed(chain):
            items.extend(copy.deepcopy(stored.input))
            items.extend(copy.deepcopy(stored.output))
        return items

    def pending(self) -> int:
        """How many queued replies have not been used yet."""
        with self._lock:
            return len(self._queue)

    # -- request handling ----------------------------------------------------------------------

    def _dispatch(self, http: BaseHTTPRequestHandler) -> None:
        split = urlsplit(http.path)
        length = int(http.headers.get("Content-Length") or 0)
        raw = http.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = RecordedRequest(
            method=http.command,
            path=split.path,
            query=parse_qs(split.query),
            headers={k.lower(): v for k, v in http.headers.items()},
            body=body,
            raw=raw,
        )
        with self._lock:
            self.requests.append(request)
        reply = self.answer(request)
        self._remember(request, self._previous_response_id(request), reply)
        self._send(http, request, reply)

    def answer(self, request: RecordedRequest) -> FakeReply:
        """Return the reply the server gives `request`, without recording the request.

        The routes, the queue and the defaults answer it as if it had come over the socket.
        """
        with self._lock:
            routes = list(self._routes)
        reply: FakeReply | dict[str, Any] | None = None
        previous = self._previous_response_id(request)
        if previous is not None:
            try:
                request.history = self.response_chain(previous)
            except KeyError:
                reply = _previous_response_not_found(previous)
        for method, prefix, handler in routes if reply is None else []:
            if method == request.method and request.path.startswith(prefix):
                reply = handler(request)
                if reply is not None:
                    break
        if reply is None and request.method == "POST" and request.path == "/v1/responses":
            with self._lock:
                queued = self._queue.popleft() if self._queue else None
            reply = queued(request) if callable(queued) else queued
            if reply is None:
                reply = text_response("ok")
        if reply is None:
            reply = FakeReply(
                status=404, body={"error": {"message": f"no route for {request.path}"}}
            )
        if not isinstance(reply, FakeReply):
            reply = FakeReply(body=reply)
        return reply

    @staticmethod
    def _previous_response_id(request: RecordedRequest) -> str | None:
        if request.method != "POST" or request.path not in _CHAINED_PATHS:
            return None
        if not isinstance(request.body, dict):
            return None
        previous = request.body.get("previous_response_id")
        return previous if isinstance(previous, str) else None

    def _remember(self, request: RecordedRequest, previous: str | None, reply: FakeReply) -> None:
        """Keep a served response and its input, as the API does unless `store` is false."""
        if request.method != "POST" or request.path != "/v1/responses":
            return
        if reply.status != 200 or reply.raw is not None or not isinstance(request.body, dict):
            return
        if request.body.get("store") is False:
            return
        body = reply.body
        if reply.events is not None:
            completed = [e for e in reply.events if e.get("type") == "response.completed"]
            body = completed[-1].get("response") if completed else None
        if not isinstance(body, dict) or not isinstance(body.get("id"), str):
            return
        output = body.get("output")
        stored = _StoredResponse(
            previous_response_id=previous,
            input=input_items(request.body.get("input")),
            output=[copy.deepcopy(i) for i in output if isinstance(i, dict)]
            if isinstance(output, list)
            else [],
        )
        with self._lock:
            self._stored[body["id"]] = stored

    def _send(
        self, http: BaseHTTPRequestHandler, request: RecordedRequest, reply: FakeReply
    ) -> None:
        delay = reply.delay + self.default_delay
        if delay:
            time.sleep(delay)
        streaming = isinstance(request.body, dict) and request.body.get("stream") is True
        try:
            if reply.raw is not None:
                self._write(http, reply.status, reply.content_type, reply.raw, reply.headers)
            elif (
                streaming and reply.status == 200 and (reply.events or isinstance(reply.body, dict))
            ):
                events = reply.events if reply.events is not None else sse_events_for(reply.body)
                payload = b"".join(
                    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
                )
                self._write(http, 200, "text/event-stream", payload, reply.headers)
            else:
                body = reply.body
                if reply.status >= 400 and body is None:
                    body = {
                        "error": {"message": f"fake error {reply.status}", "type": "server_error"}
                    }
                data = json.dumps(body if body is not None else {}).encode()
                self._write(http, reply.status, "application/json", data, reply.headers)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (for example after its own timeout)

    @staticmethod
    def _write(
        http: BaseHTTPRequestHandler,
        status: int,
        content_type: str,
        data: bytes,
        headers: dict[str, str],
    ) -> None:
        http.send_response(status)
        http.send_header("Content-Type", content_type)
        http.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            http.send_header(name, value)
        http.end_headers()
        http.wfile.write(data)
        http.wfile.flush()


def iter_requests(server: FakeOpenAIServer, path: str) -> Iterator[Any]:
    """Yield the JSON bodies of the recorded POST requests to `path`."""
    for request in server.requests_to(path):
        yield request.body
