"""One model call, with retries: exponential backoff with jitter, honouring `Retry-After`.

The `openai` client is created with `max_retries=0` and this module retries instead, because
the client's own retry cannot be tuned (its backoff starts at 0.5 s and stops growing at 8 s,
too short for a rate-limited run over a whole site; `Retry-After: 0` is ignored; its constants
are module globals) and because each retry should show up in the run's progress output.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

__all__ = ["ModelCallError", "ModelReply", "RetryPolicy", "call_model", "retry_delay"]


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
    """

    text: str
    input_tokens: int
    output_tokens: int
    cut_off: str | None = None


class ModelCallError(Exception):
    """A model call failed for good (not retryable, or out of retries)."""


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
    limiter: asyncio.Semaphore,
    on_retry: Callable[[str, float, int], None] | None = None,
) -> ModelReply:
    """Send one Responses API request, retrying transient failures.

    The `limiter` is held only while a request is in flight, not while backing off, so a
    rate-limited call does not block the others' slots.

    Args:
        client: The client (its own retries off).
        model: The model name.
        effort: The reasoning effort, or `None` to send none.
        instructions: The system-level instructions.
        messages: The conversation (`role`, `content`).
        policy: The retry policy.
        limiter: Bounds the requests in flight.
        on_retry: Called with (reason, delay, attempt) before each retry.

    Raises:
        ModelCallError: The call failed for good.
    """
    request: dict[str, Any] = {"model": model, "instructions": instructions, "input": messages}
    if effort:
        request["reasoning"] = {"effort": effort}
    attempt = 0
    while True:
        try:
            async with limiter:
                response = await client.responses.create(**request)
        except openai.OpenAIError as exc:
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
        usage = response.usage
        cut_off = None
        if response.status == "incomplete":
            details = response.incomplete_details
            cut_off = (details.reason if details else None) or "unknown reason"
        return ModelReply(
            text=response.output_text,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            cut_off=cut_off,
        )


def _message(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
