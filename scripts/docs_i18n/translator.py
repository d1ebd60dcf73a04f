"""One model call, with retries: exponential backoff with jitter, honouring `Retry-After`.

The `openai` client is created with `max_retries=0` and this module retries instead, because
the client's own retry cannot be tuned (its backoff starts at 0.5 s and stops growing at 8 s,
too short for a rate-limited run over a whole site; `Retry-After: 0` is ignored; its constants
are module globals) and because each retry should show up in the run's progress output.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import random
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import openai

__all__ = [
    "Deferred",
    "EndpointUnreachable",
    "ModelCallError",
    "ModelReply",
    "ReplyBook",
    "RetryPolicy",
    "call_model",
    "is_unicode",
    "load_reply_json",
    "request_id",
    "retry_delay",
]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait between attempts of one call.

    Attributes:
        max_retries: Retries after the first attempt.
        base_delay: The first backoff in seconds; it doubles on each retry.
        max_delay: The longest backoff in seconds (before jitter).
        max_retry_after: The longest server-requested wait honoured, in seconds.
    """

    max_retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 300.0


@dataclass
class ModelReply:
    """The text of a model reply and the tokens it used.

    Attributes:
        text: The reply's output text.
        input_tokens: Input tokens billed.
        output_tokens: Output tokens billed (reasoning included).
        cut_off: Why the reply is incomplete (for example `"max_output_tokens"`), or `None`.
        request_chars: Characters sent (instructions and messages).
        cached_tokens: The part of `input_tokens` the API served from its prompt cache
            (`usage.input_tokens_details.cached_tokens`), billed at the cached-input price.
        batched: Whether the reply came back from the Batch API (billed at half price).
    """

    text: str
    input_tokens: int
    output_tokens: int
    cut_off: str | None = None
    request_chars: int = 0
    cached_tokens: int = 0
    batched: bool = False


class ModelCallError(Exception):
    """A model call failed for good (not retryable, out of retries, or a malformed reply)."""


class Deferred(Exception):
    """The request was put in a Batch API file instead of being sent (`translate_docs.py
    --batch`): the job waits for `--batch-collect`.

    Attributes:
        request: The request's id (`request_id`), its `custom_id` in the batch.
    """

    def __init__(self, request: str) -> None:
        super().__init__(f"request {request} waits in the batch")
        self.request = request


def request_id(request: dict[str, Any]) -> str:
    """A stable id of a Responses API request body: the SHA-256 of its canonical JSON.

    The Batch API's `custom_id` of the request, so that `--batch-collect` finds the reply of
    exactly the request a run would send now (a page edited since gets no stale reply).
    """
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "req-" + hashlib.sha256(canonical.encode()).hexdigest()[:32]


class ReplyBook:
    """Where model requests go instead of the network, for the Batch API (`--batch`).

    When submitting, a request is recorded (`requests`) and `Deferred` is raised: the run
    stops each job at its first request. When collecting, the Batch API's replies (response
    bodies by request id) answer the requests that match one; any other request (a repair, a
    review, an item the batch did not finish) is sent as usual.

    Args:
        replies: Response bodies by request id (collecting), or `None` (submitting).
    """

    def __init__(self, replies: dict[str, str] | None = None) -> None:
        self.submitting = replies is None
        self.replies = dict(replies or {})
        self.requests: dict[str, dict[str, Any]] = {}
        self.used: set[str] = set()

    def take(self, request: dict[str, Any]) -> ModelReply | None:
        """The batch's reply to `request`, or `None` to send it.

        Raises:
            Deferred: Submitting: `request` was recorded for the batch.
            ModelCallError: The batch's reply to `request` is malformed.
        """
        key = request_id(request)
        if self.submitting:
            self.requests[key] = request
            raise Deferred(key)
        raw = self.replies.get(key)
        if raw is None:
            return None
        self.used.add(key)
        reply = _read_reply(raw)
        reply.batched = True
        return reply


class EndpointUnreachable(ModelCallError):
    """The API endpoint refused the connection: a wrong `OPENAI_BASE_URL`, or no server there.

    Not retried, and it stops the whole run: every other call would fail the same way.
    """


def _refused(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        current = current.__cause__ or current.__context__
    return False


def is_unicode(text: str) -> bool:
    """Tell whether `text` can be written as UTF-8 (JSON's `\\ud800` escape decodes to a lone
    surrogate, which cannot: it would fail the next request or the page's write)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def load_reply_json(text: str) -> Any:
    """Read the JSON a model wrote as its text (a batch of sections, a review).

    Raises:
        ValueError: `text` is not JSON, is nested too deeply to read, or holds a lone
            surrogate (the `\\ud800` escape), which no request or page could carry.
    """
    try:
        data = json.loads(text)
    except RecursionError as exc:
        raise ValueError(f"nested too deeply to read: {text[:80]!r}") from exc
    if not is_unicode(json.dumps(data, ensure_ascii=False)):
        raise ValueError(f"a string holds a lone surrogate (not Unicode text): {text[:80]!r}")
    return data


def _read_reply(raw: str) -> ModelReply:
    """Read a Responses API body by hand, so that a malformed one is a clear `ModelCallError`."""
    try:
        data: Any = json.loads(raw)
    except ValueError as exc:
        raise ModelCallError(f"malformed reply: not JSON ({exc}): {raw[:80]!r}") from exc
    except RecursionError as exc:
        raise ModelCallError(f"malformed reply: nested too deeply to read: {raw[:80]!r}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise ModelCallError(f"malformed reply: no output list in {raw[:80]!r}")
    texts: list[str] = []
    for item in data["output"]:
        if not isinstance(item, dict):
            raise ModelCallError(f"malformed reply: an output item is not an object: {item!r}")
        if item.get("type") != "message":
            continue
        content = item.get("content")
        if not isinstance(content, list):
            raise ModelCallError("malformed reply: a message without a content list")
        for part in content:
            if not isinstance(part, dict):
                raise ModelCallError(f"malformed reply: a content part is not an object: {part!r}")
            if part.get("type") == "output_text":
                if not isinstance(part.get("text"), str):
                    raise ModelCallError("malformed reply: output_text without text")
                if not is_unicode(part["text"]):
                    raise ModelCallError(
                        "malformed reply: the text holds a lone surrogate (not Unicode text)"
                    )
                texts.append(part["text"])
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    cut_off = None
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        cut_off = str(reason or "unknown reason")

    def _count(data: dict[str, Any], name: str) -> int:
        value = data.get(name)
        return value if isinstance(value, int) else 0

    details = usage.get("input_tokens_details")
    return ModelReply(
        text="".join(texts),
        input_tokens=_count(usage, "input_tokens"),
        output_tokens=_count(usage, "output_tokens"),
        cut_off=cut_off,
        cached_tokens=_count(details, "cached_tokens") if isinstance(details, dict) else 0,
    )


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_delay(policy: RetryPolicy, attempt: int, headers: Any = None) -> float:
    """Return how long to wait before retry number `attempt` (0 for the first retry).

    A `Retry-After` (or `retry-after-ms`) header wins, capped at `policy.max_retry_after`;
    otherwise `base_delay * 2**attempt`, capped at `max_delay`, times a random jitter in
    [0.5, 1.0) so that parallel callers spread out.
    """
    server = _retry_after(headers)
    if server is not None:
        return min(server, policy.max_retry_after)
    backoff = min(policy.max_delay, policy.base_delay * (2.0**attempt))
    return backoff * (0.5 + random.random() / 2)


def _retryable(exc: Exception) -> tuple[bool, Any, str]:
    """Return (retryable, response headers, a short reason) for an exception from the client."""
    if isinstance(exc, openai.APITimeoutError):
        return True, None, "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return True, None, "connection error"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry = status in (408, 409, 429) or status >= 500
        return retry, exc.response.headers, f"HTTP {status}"
    return False, None, type(exc).__name__


async def call_model(
    client: openai.AsyncOpenAI,
    *,
    model: str,
    effort: str | None,
    instructions: str,
    messages: list[dict[str, str]],
    policy: RetryPolicy,
    limiter: AbstractAsyncContextManager[Any],
    on_retry: Callable[[str, float, int], None] | None = None,
    text_format: dict[str, Any] | None = None,
    book: ReplyBook | None = None,
) -> ModelReply:
    """Send one Responses API request, retrying transient failures.

    The `limiter` is held only while a request is in flight, not while backing off, so a
    rate-limited call does not block the others' slots. The reply body is read by hand: a
    malformed one (not JSON, truncated, the wrong shape) is a `ModelCallError`, not a crash.

    Args:
        client: The client (its own retries off).
        model: The model name.
        effort: The reasoning effort, or `None` to send none.
        instructions: The system-level instructions.
        messages: The conversation (`role`, `content`).
        policy: The retry policy.
        limiter: Bounds the requests in flight: held (`async with`) while the request is.
        on_retry: Called with (reason, delay, attempt) before each retry.
        text_format: The `text.format` of the request (a JSON schema for Structured Outputs),
            or `None` for plain text.
        book: With the Batch API: records the request instead of sending it, or answers it
            with the batch's reply (see `ReplyBook`).

    Raises:
        Deferred: The request was recorded for a batch (`book` is submitting).
        EndpointUnreachable: The endpoint refused the connection (not retried).
        ModelCallError: The call failed for good, or the reply is malformed.
    """
    request: dict[str, Any] = {"model": model, "instructions": instructions, "input": messages}
    if effort:
        request["reasoning"] = {"effort": effort}
    if text_format is not None:
        request["text"] = {"format": text_format}
    request_chars = len(instructions) + sum(len(m["content"]) for m in messages)
    if book is not None:
        booked = book.take(request)
        if booked is not None:
            booked.request_chars = request_chars
            return booked
    attempt = 0
    while True:
        try:
            async with limiter:
                raw = await client.responses.with_raw_response.create(**request)
                body = raw.http_response.text
        except openai.OpenAIError as exc:
            if isinstance(exc, openai.APIConnectionError) and _refused(exc):
                raise EndpointUnreachable(
                    f"cannot connect to {client.base_url}: connection refused "
                    "(is OPENAI_BASE_URL right, and is the server up?)"
                ) from exc
            retry, headers, reason = _retryable(exc)
            if not retry:
                raise ModelCallError(f"{reason}: {_message(exc)}") from exc
            if attempt >= policy.max_retries:
                raise ModelCallError(f"{reason} after {attempt + 1} attempts") from exc
            delay = retry_delay(policy, attempt, headers)
            if on_retry is not None:
                on_retry(reason, delay, attempt + 1)
            await asyncio.sleep(delay)
            attempt += 1
            continue
        reply = _read_reply(body)
        reply.request_chars = request_chars
        return reply


def _message(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
